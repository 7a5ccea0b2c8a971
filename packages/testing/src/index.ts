// In-process fixtures: a gateway started inside the test process, test keys, a WebSocket test
// client. Starting real processes (redis-server, HAProxy, the CLI) is @switchboard/harness.
export * from './gateway';
export * from './ws-client';
export * from './uws-churn';
