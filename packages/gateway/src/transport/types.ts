/**
 * The transport seam: what the gateway needs from a WebSocket + HTTP server. Only
 * `transport/uws.ts` implements it (and imports uWebSockets.js); a uWS WebSocket satisfies
 * `Conn` structurally, so connections cost no wrapper object.
 */

/** A live WebSocket, valid from `open` to `close`. */
export interface Conn {
  /** 1 sent, 0 buffered (backpressure), 2 dropped (over the backpressure limit). */
  send(message: string | Uint8Array, isBinary?: boolean): number;
  subscribe(topic: string): boolean;
  unsubscribe(topic: string): boolean;
  /** Publishes to a topic's subscribers except this connection. */
  publish(topic: string, message: string | Uint8Array, isBinary?: boolean): boolean;
  /** Sends a close frame with code and reason; the close handler runs at once. */
  end(code: number, reason?: string): void;
  getBufferedAmount(): number;
}

export interface UpgradeRequest {
  /** Path without the query string. */
  readonly path: string;
  /** Raw query string, without `?`. */
  readonly query: string;
  /** Lower-cased header names; only the ones the gateway reads. */
  readonly headers: { readonly origin: string; readonly jwt: string };
  /**
   * The socket peer's IP address as text (a proxy's, when one stands in front). Read on demand
   * (a system call), and only in `refuseUpgrade`: the request's socket may be gone after it.
   */
  remoteAddress(): string;
  /** The `X-Forwarded-For` header, empty when absent. */
  readonly forwardedFor: string;
}

export interface HttpRequest {
  readonly method: string;
  /** Path without the query string (the cluster API takes every parameter in the body). */
  readonly path: string;
  /** Raw query string, without `?` (read by the dialects' own HTTP APIs, e.g. Pusher's signed requests). */
  readonly query: string;
  /**
   * The headers the cluster API reads (`content-length`, `x-forwarded-for`), lower-case, present
   * when not empty: copying every header out of uWS costs each request a string per name and value.
   */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /**
   * The socket peer's IP address as text (a proxy's, when one stands in front). Read on demand:
   * it costs a system call, and only the failed-authentication limits need it. Empty once the
   * client went away (its socket is gone).
   */
  remoteAddress(): string;
}

export interface HttpReply {
  readonly status: number;
  /** `application/json` when absent. */
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface TransportHandlers<T> {
  /**
   * Decides an upgrade: user data to accept (admitted, or carrying a rejection to send as an
   * error frame), or `null` for "no WebSocket here" (HTTP 404). Decided at once when admission
   * needs no engine round trip (the upgrade then completes inside the transport's own handler,
   * with no promise and no abort watch), else as a promise.
   */
  upgrade(request: UpgradeRequest): T | null | Promise<T | null>;
  /**
   * Called first, synchronously: a reply refuses the upgrade before `upgrade` runs (and before
   * any engine work), e.g. a 429 for a handshake flood.
   */
  refuseUpgrade(request: UpgradeRequest): HttpReply | undefined;
  /** The client went away while `upgrade` was pending; undo what admission acquired. */
  upgradeAborted(data: T): void;
  /**
   * The transport lost the socket of an upgrade decided late, right after it was made and before
   * `open` (a bug of uWebSockets.js 20.30, docs/architecture.md, "Upgrades that wait"): the client
   * saw the upgrade, then a 1006 close, and reconnects. Undo what admission acquired.
   */
  upgradeLost(data: T): void;
  /** `data` is what `upgrade` decided for the connection, in every callback of it. */
  open(conn: Conn, data: T): void;
  message(conn: Conn, data: T, message: ArrayBuffer, isBinary: boolean): void;
  drain(conn: Conn, data: T): void;
  close(conn: Conn, data: T, code: number): void;
  /**
   * An open connection other than `except` (past `open`, before `close`), or undefined when there
   * is none: the transport asks when the connection whose cork it borrows closes (it keeps no
   * list of its own). Called before `close` of `except`.
   */
  anotherOpen(except: Conn): Conn | undefined;
  /** The reply at once when it needs no wait (it is then written in the request's own turn). */
  http(request: HttpRequest): HttpReply | Promise<HttpReply>;
  /** The reply for a body over the limit (it is never read in full), to a request for `path`. */
  bodyTooLarge(path: string): HttpReply;
}

export interface TransportOptions {
  /** Largest frame the transport accepts at all; the gateway enforces its own smaller limit. */
  readonly maxFrameBytes: number;
  readonly maxBodyBytes: number;
  readonly idleTimeoutSeconds: number;
  /** Send buffer past which a connection no longer gets published messages. */
  readonly maxBackpressureBytes: number;
  /**
   * Whether requests' `X-Forwarded-For` lines are read at all: only a peer listed in
   * `TRUSTED_PROXIES` may name a client address, so without one the header is never looked at
   * (reading every line costs about 2 µs a request).
   */
  readonly readForwardedFor: boolean;
}

export interface Transport {
  /** Resolves the bound port (`port` 0 picks a free one). */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting connections; open ones stay. */
  stopListening(): void;
  /** Sends to every connection subscribed to `topic`, in C++, without per-recipient JavaScript. */
  publish(topic: string, message: string | Uint8Array, isBinary?: boolean): void;
  numSubscribers(topic: string): number;
  /** Closes the listen socket and every connection at once. */
  close(): void;
}
