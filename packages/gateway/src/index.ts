export { createGateway } from './gateway';
export type { Gateway, GatewayDeps } from './gateway';
export type { GatewayContext } from './context';
export { loadUws } from './transport/uws-loader';
export { UPGRADE_LOST } from './ws/socket-handlers';
