/**
 * The Pusher Channels protocol 7 (docs/pusher.md): names, authorization, request signing, frames,
 * socket ids and codes, without I/O. The gateway's Pusher dialect is built on these.
 */
export * from './auth';
export * from './channels';
export * from './client-frames';
export * from './codes';
export * from './connect';
export * from './frames';
export * from './http-api';
export * from './http-auth';
export * from './http-errors';
export * from './result';
export * from './socket-id';
export * from './subscribe';
