/**
 * The one error catalog. Every error a client can see has a stable `code`; HTTP errors carry a
 * status, WebSocket errors a close code. Close codes follow docs/errors.md: 4000–4499 the client may
 * reconnect, 4500–4999 terminal (always preceded by an `{"error": …}` frame, because the v3 SDKs
 * reconnect at once unless an error frame came first). `docs/errors.md` lists every entry and a
 * test keeps the two in agreement.
 */

export interface HttpErrorSpec {
  readonly status: number;
  readonly message: string;
}

export const HTTP_ERRORS = {
  SB_BAD_JSON: { status: 400, message: 'Request body is not valid JSON' },
  SB_INVALID_FIELD: { status: 400, message: 'A field is missing or invalid' },
  SB_MISSING_MESSAGE: { status: 400, message: 'Missing message from payload' },
  SB_UNAUTHORIZED: { status: 401, message: 'Unknown API key or wrong secret' },
  SB_NOT_FOUND: { status: 404, message: 'Not found' },
  SB_METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  SB_PAYLOAD_TOO_LARGE: { status: 413, message: 'Payload too large' },
  SB_RATE_LIMITED: { status: 429, message: 'Too many requests' },
  SB_AUTH_RATE_LIMITED: { status: 429, message: 'Too many failed authentications; retry later' },
  SB_ENGINE_UNAVAILABLE: {
    status: 503,
    message: 'The engine is unreachable; the request was not carried out',
  },
} as const satisfies Record<string, HttpErrorSpec>;

export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/**
 * An error answered over HTTP. `message` overrides the catalog text with a more precise one.
 * Catalog errors are expected answers (a 400, a 429 to a flooding tenant…), not faults: they carry
 * no stack trace, whose capture was the largest single cost of refusing a request. Faults keep
 * theirs (anything not an `AppError` is answered SB_INTERNAL and logged with its stack;
 * `EngineUnavailableError` captures one).
 */
export class AppError extends Error {
  readonly code: HttpErrorCode;
  readonly status: number;
  /** Sent as `Retry-After` (seconds) with a 429. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    code: HttpErrorCode,
    message?: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message ?? HTTP_ERRORS[code].message, options);
    Error.stackTraceLimit = limit;
    this.name = 'AppError';
    this.code = code;
    this.status = HTTP_ERRORS[code].status;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}

/**
 * What a client is told when a call reached the engine and no answer came back (a stalled Redis
 * that let the command time out, or a connection lost while the call was in flight): the engine
 * may have carried it out, so a retried publish can be made twice (docs/errors.md).
 */
export const ENGINE_UNCONFIRMED =
  'The engine did not confirm the request (no answer in time, or the connection dropped); it may have been carried out';

/**
 * Thrown by engine implementations when their backend (Redis) cannot carry out a call:
 * `unconfirmed` when the call was sent and no answer came back, so its outcome is unknown.
 */
export class EngineUnavailableError extends AppError {
  constructor(
    cause?: unknown,
    readonly unconfirmed = false,
  ) {
    super('SB_ENGINE_UNAVAILABLE', unconfirmed ? ENGINE_UNCONFIRMED : undefined, { cause });
    this.name = 'EngineUnavailableError';
    // A fault worth a stack in the logs, unlike the other catalog errors.
    Error.captureStackTrace(this, EngineUnavailableError);
  }
}

export interface CloseSpec {
  readonly code: number;
  readonly message: string;
}

export const CLOSE_CODES = {
  /** Reconnect: the node is restarting or draining; clients reconnect to another node. */
  SERVER_DRAINING: { code: 4000, message: 'Server restarting, reconnect' },
  /** Reconnect: the socket's send buffer passed the slow-consumer limit. */
  SLOW_CONSUMER: { code: 4008, message: 'Too slow to read, reconnect' },
  /** Reconnect: the engine (Redis) is unreachable and the key could not be checked. */
  UNAVAILABLE: { code: 4013, message: 'Service temporarily unavailable, reconnect later' },
  /** Reconnect: more client messages per second than the limit. */
  RATE_LIMITED: { code: 4029, message: 'Rate limit exceeded, slow down' },
  /** Terminal: the `api_key` is missing or unknown. */
  INVALID_API_KEY: { code: 4501, message: 'Invalid API key' },
  /** Terminal: the channel name in the /v3/… or /v4/… path breaks the naming rules. */
  INVALID_CHANNEL: { code: 4502, message: 'Invalid channel name' },
  /** Terminal: the `Origin` is not one of the key's allowed domains. */
  ORIGIN_NOT_ALLOWED: { code: 4503, message: 'Origin not allowed for this API key' },
  /** Terminal: a guarded channel without a valid JWT. */
  AUTH_FAILED: { code: 4504, message: 'Authentication failed, provide valid jwt token.' },
  /** Terminal: kicked through the cluster API. */
  KICKED: { code: 4509, message: 'Connection closed by administrator' },
  /** Terminal: a frame over the message size limit. */
  MESSAGE_TOO_LARGE: { code: 4513, message: 'Message too large' },
  /** Terminal: the `uuid` or `user` (query or JWT claim) is over its length limit. */
  IDENTITY_TOO_LONG: { code: 4514, message: 'uuid or user too long' },
  /** Terminal: `since` or `epoch` in the URL is malformed (not an offset, not an epoch token). */
  INVALID_RESUME: { code: 4540, message: 'Invalid since or epoch' },
  /** Terminal: the node or the key reached its connection limit. */
  CONNECTION_LIMIT: { code: 4529, message: 'Connection limit reached' },
} as const satisfies Record<string, CloseSpec>;

export type CloseReason = keyof typeof CLOSE_CODES;

/** Whether a client may reconnect after this close code (the ranges of docs/errors.md). */
export const isReconnectable = (code: number): boolean => code >= 4000 && code < 4500;
