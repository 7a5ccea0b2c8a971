export { Switchboard } from './client';
export type { SwitchboardOptions, ConnectionState } from './client';
export { Channel, identity } from './channel';
export type { ChannelOptions, ChannelState, Member, Publication } from './channel';
export { QueueFullError, SwitchboardError } from './errors';
export type { ErrorKind } from './errors';
export type { BackoffOptions } from './backoff';
export type { WebSocketConstructor } from './platform';
