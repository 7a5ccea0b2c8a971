export { createGateway } from './gateway';
export type { Gateway, GatewayDeps } from './gateway';
export type { GatewayContext } from './context';
export { loadUws } from './transport/uws-loader';
export { UPGRADE_LOST } from './connections/socket-handlers';
// The Pusher HTTP API's request signature check: the benchmark's Pusher client is tested against it.
export { parseQuery, verifySignedRequest } from './protocols/pusher/http-auth';
