/**
 * Close-code ranges of the server's catalog (docs/errors.md, "WebSocket close codes"),
 * duplicated here because the client ships alone, without @switchboard/core:
 * 4000–4499 the client may reconnect, 4500–4999 terminal.
 */
export const RECONNECT_MIN = 4000;
export const TERMINAL_MIN = 4500;
export const TERMINAL_MAX = 4999;

export function isTerminalClose(code: number): boolean {
  return code >= TERMINAL_MIN && code <= TERMINAL_MAX;
}

/** The server asked this client to go away for a while (drain, overload, rate limit). */
export function isServerReconnect(code: number): boolean {
  return code >= RECONNECT_MIN && code < TERMINAL_MIN;
}

/** What went wrong, for programs: `kind` and `code`, never the text. */
export type ErrorKind =
  /** The server closed the socket with a terminal code (4500–4999); the client stopped. */
  | 'closed'
  /** The server refused a channel (`system::subscribe_error`). */
  | 'subscribe'
  /** The server removed this channel from the socket (a partial kick). */
  | 'kicked'
  /** `getToken` threw or returned no token. */
  | 'token'
  /** A frame of this channel was refused (`system::error`); the socket stays open. */
  | 'frame'
  /** The operation cannot run: the channel was left or the client closed. */
  | 'state'
  /** No reply within the protocol's 10 seconds (a member list, a publish's confirmation). */
  | 'timeout'
  /** The channel's queue of unsent messages is full (`QueueFullError`). */
  | 'queue_full'
  /**
   * The socket closed after the message was written and before the server confirmed it: it
   * may or may not have reached the channel.
   */
  | 'unconfirmed';

export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';
  constructor(
    readonly kind: ErrorKind,
    /** The server's text (error frame, close reason, subscribe error) or the client's. */
    readonly reason: string,
    /** The close code, for `closed`. */
    readonly code?: number,
    /** The channel concerned, when there is one. */
    readonly channel?: string,
  ) {
    super(code ? `${reason} (${code})` : reason);
  }
}

/**
 * A publish was refused at once because the channel already holds `limit` messages waiting to
 * be sent (offline, or faster than the client's pace): the client never holds more than that.
 */
export class QueueFullError extends SwitchboardError {
  constructor(
    /** The channel's bound (the `maxQueued` option). */
    readonly limit: number,
    channel: string,
  ) {
    super(
      'queue_full',
      `${limit} messages are already waiting to be sent on this channel`,
      undefined,
      channel,
    );
  }
}
