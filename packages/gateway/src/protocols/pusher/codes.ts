/**
 * The Pusher family's error and close codes (docs/pusher.md, "Errors and close codes").
 *
 * Pusher's protocol 7 groups codes by what the client should do next, and `pusher-js` 8 acts on the
 * group of a close code: 4000–4099 stop (no reconnect), 4100–4199 reconnect with backoff, 4200–4299
 * reconnect at once, 4300 and above stop as well. A connection-level error is sent as a
 * `pusher:error {code, message}` frame and then the socket is closed with the same code and
 * message, so every Pusher client (those that read close codes and those that read the frame)
 * acts the same way. `message` texts are Pusher's where Pusher documents one; each fits in a close
 * frame's 123-byte reason.
 */

/** What a client does after this code, as `pusher-js` 8 decides from the code's range. */
export type PusherReconnect = 'never' | 'backoff' | 'immediately';

export interface PusherErrorSpec {
  readonly code: number;
  readonly message: string;
  readonly reconnect: PusherReconnect;
  /**
   * Whether the socket is closed with this code after the `pusher:error` frame. 4301 is not: the
   * offending client event is dropped and the socket stays open, because a close with a code of
   * 4300 or more makes `pusher-js` give up for good, too harsh for a burst of whispers.
   */
  readonly closes: boolean;
}

export const PUSHER_ERRORS = {
  /** The key in `/app/{key}` is not a Switchboard key. */
  APP_NOT_FOUND: { code: 4001, message: 'Application does not exist', reconnect: 'never', closes: true },
  /** The key exists but is disabled. */
  APP_DISABLED: { code: 4003, message: 'Application disabled', reconnect: 'never', closes: true },
  /** The key's cluster-wide connection quota is reached. */
  OVER_CONNECTION_QUOTA: {
    code: 4004,
    message: 'Application is over connection quota',
    reconnect: 'never',
    closes: true,
  },
  /** `protocol` in the query is missing or not a version this server speaks (7). */
  UNSUPPORTED_PROTOCOL: {
    code: 4007,
    message: 'Unsupported protocol version',
    reconnect: 'never',
    closes: true,
  },
  /** The `Origin` is not one of the key's allowed domains. */
  ORIGIN_NOT_ALLOWED: {
    code: 4009,
    message: 'Connection is unauthorized: origin not allowed for this app',
    reconnect: 'never',
    closes: true,
  },
  /** The node is at its connection limit (or the engine is unreachable): try again later. */
  OVER_CAPACITY: { code: 4100, message: 'Over capacity', reconnect: 'backoff', closes: true },
  /** The node is draining (or the app's connections were terminated): reconnect at once, elsewhere. */
  RECONNECT: { code: 4200, message: 'Please reconnect immediately', reconnect: 'immediately', closes: true },
  /** A `pusher:ping` from the server got no `pusher:pong` in time. */
  PONG_NOT_RECEIVED: {
    code: 4201,
    message: 'Pong reply not received',
    reconnect: 'immediately',
    closes: true,
  },
  /** More client events per second than the limit: the event is dropped, the socket stays open. */
  CLIENT_EVENT_RATE_LIMIT: {
    code: 4301,
    message: 'Client event rejected due to rate limit',
    reconnect: 'never',
    closes: false,
  },
} as const satisfies Record<string, PusherErrorSpec>;

export type PusherErrorName = keyof typeof PUSHER_ERRORS;

/** What `pusher-js` 8 does after a close with `code` (its `Protocol.getCloseAction`, by range). */
export function reconnectAfterClose(code: number): PusherReconnect | 'tls-only' {
  if (code === 4000) return 'tls-only';
  if (code >= 4000 && code < 4100) return 'never';
  if (code >= 4100 && code < 4200) return 'backoff';
  if (code >= 4200 && code < 4300) return 'immediately';
  return 'never';
}

/** The only protocol version served: every maintained Pusher client (`pusher-js` since 2.2) sends 7. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [7];

/**
 * Seconds of silence after which either side pings (sent in `pusher:connection_established`).
 * Pusher's default: `pusher-js` uses the smaller of this and its own `activityTimeout` option.
 */
export const DEFAULT_ACTIVITY_TIMEOUT_SECONDS = 120;

/** Seconds the server waits for a `pusher:pong` after its `pusher:ping` before closing with 4201 (pusher-js's own pong timeout). */
export const DEFAULT_PONG_TIMEOUT_SECONDS = 30;
