// In-process fixtures: a gateway started inside the test process, test keys, a WebSocket test
// client, the Pusher SDKs set up against a test gateway. Starting real processes (redis-server,
// HAProxy, the CLI) is @switchboard/harness.
export * from './gateway';
export * from './ws-client';
export * from './uws-churn';
export * from './pusher';
