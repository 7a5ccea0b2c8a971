// The product-agnostic harness: what the tests, the benchmark and the chaos run share to start and
// watch real processes. Nothing here imports the product (core's own tests use it); in-process
// fixtures that do (an in-process gateway, a test key) live in @switchboard/testing.
export * from './redis-server';
export * from './process';
export * from './chromium';
export * from './wait';
export * from './haproxy';
export * from './ports';
export * from './raw-http';
export * from './webhook-receiver';
export * from './balanced-cluster';
export * from './recovering-client';
export * from './resume-recorder';
export * from './descendants';
export * from './tcp-proxy';
