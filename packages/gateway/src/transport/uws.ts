import type * as uWS from '@btc-vision/uwebsockets.js';
import { loadUws } from './uws-loader';
import type { Conn, HttpReply, Transport, TransportHandlers, TransportOptions } from './types';

/** uWS's HttpResponse methods we use (its typings leave them untyped). */
interface Response {
  onAborted(cb: () => void): void;
  onData(cb: (chunk: ArrayBuffer, isLast: boolean) => void): void;
  cork(cb: () => void): void;
  writeStatus(status: string): Response;
  writeHeader(name: string, value: string): Response;
  getRemoteAddressAsText(): ArrayBuffer;
  end(body?: string): void;
  upgrade<T>(
    data: T,
    key: string,
    protocol: string,
    extensions: string,
    context: uWS.us_socket_context_t,
  ): void;
}

/** Status lines built once, not per reply. */
const STATUS_LINE: Record<number, string> = {
  200: '200 OK',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

/** The request headers handed to the HTTP handler (`HttpRequest.headers`), `x-forwarded-for` aside. */
const READ_HEADERS = ['content-length'] as const;

/**
 * Every `X-Forwarded-For` line of a request, joined with ", " in order as Node joins them; empty
 * when there is none. `getHeader` returns the first line only, and HAProxy's `option forwardfor`
 * appends its own line after any the client wrote: reading the first would let the client choose
 * its address (docs/security.md, "Client addresses").
 */
function forwardedFor(req: uWS.HttpRequest): string {
  let joined = '';
  let seen = false;
  req.forEach((name, value) => {
    if (name !== 'x-forwarded-for') return;
    joined = seen ? `${joined}, ${value}` : value;
    seen = true;
  });
  return joined;
}

const NO_ENDPOINT: HttpReply = {
  status: 404,
  body: JSON.stringify({
    success: false,
    error: 'No WebSocket endpoint here; use /v3/<channel> or /v4/<channel>',
  }),
};

function writeReply(res: Response, reply: HttpReply): void {
  res.cork(() => {
    res.writeStatus(STATUS_LINE[reply.status] ?? String(reply.status));
    res.writeHeader('content-type', reply.contentType ?? 'application/json');
    // Browsers must not read a JSON answer as HTML or script (docs/security.md).
    res.writeHeader('x-content-type-options', 'nosniff');
    if (reply.headers) for (const name in reply.headers) res.writeHeader(name, reply.headers[name]!);
    res.end(reply.body);
  });
}

/**
 * What a socket carries: uWS copies every property of the user data given to `upgrade` onto its
 * socket object, one by one through V8's slow object API (`getUserData()` returns the socket
 * itself). The gateway's data therefore travels as the one property `data`: with the connection
 * state's own fields copied, that copy was a large share of a connection's CPU.
 */
interface Carrier<T> {
  readonly data: T;
}

/**
 * The only module that imports uWebSockets.js (through `loadUws`, which throws the start-up
 * failure when no native build loads for this Node.js).
 */
export function createUwsTransport<T>(handlers: TransportHandlers<T>, options: TransportOptions): Transport {
  const native = loadUws().uws;
  const app = native.App();
  let listenSocket: uWS.us_listen_socket | undefined;
  /** The upgrade being completed by `upgradeLate`, while uWS runs its `open`. */
  let late: { ws: uWS.WebSocket<Carrier<T>> | undefined; closed: boolean } | undefined;
  /**
   * The open socket whose cork `upgradeLate` borrows; when it closes, another open one replaces it
   * (`TransportHandlers.anotherOpen`: the transport keeps no set of its sockets, which cost every
   * connection a set entry; docs/performance.md, "Idle memory per connection"), else the next
   * socket to open.
   */
  let anchor: uWS.WebSocket<Carrier<T>> | undefined;

  /**
   * Completes an upgrade decided after uWS's upgrade handler returned, never inside a cork of the
   * upgrading socket itself. uWebSockets.js 20.30's and 20.57's `res.cork`, once its callback
   * returned, reads the HTTP response's "connection: close" flag from the socket's memory: after an
   * upgrade that memory was shrunk in place and the flag's bytes are no longer the WebSocket's, so
   * whatever reused them can close the new socket right after its `101` (fixed upstream in
   * uWebSockets fe7c01a; docs/architecture.md, "Upgrades that wait"). `res.cork` does that only
   * when it corked the socket itself, which it does not while another socket is corked: so the
   * upgrade runs in `res.cork` (uWebSockets.js prints a warning for every write made outside a
   * cork callback or its own callbacks) inside the cork of another open socket, the anchor. The
   * `101` is then written without buffering, in a few small writes. With no socket open (the first
   * late upgrade of a fresh or idle process), `res.upgrade` runs bare: as safe, with that warning
   * on stderr. The socket's `open` is held until the upgrade returned, then runs in the socket's
   * own cork; a socket closed meanwhile goes to `upgradeLost` (kept as a safety net: none was,
   * docs/operations.md).
   */
  const upgradeLate = (
    res: Response,
    data: T,
    key: string,
    protocol: string,
    extensions: string,
    context: uWS.us_socket_context_t,
  ): void => {
    const upgrading: NonNullable<typeof late> = { ws: undefined, closed: false };
    const upgrade = (): void => res.upgrade<Carrier<T>>({ data }, key, protocol, extensions, context);
    late = upgrading;
    try {
      if (anchor) anchor.cork(() => res.cork(upgrade));
      else upgrade();
    } finally {
      late = undefined;
    }
    const ws = upgrading.ws;
    if (!ws || upgrading.closed) {
      handlers.upgradeLost(data);
      return;
    }
    anchor ??= ws;
    ws.cork(() => handlers.open(ws as unknown as Conn, data));
  };

  app.ws<Carrier<T>>('/*', {
    maxPayloadLength: options.maxFrameBytes,
    idleTimeout: options.idleTimeoutSeconds,
    maxBackpressure: options.maxBackpressureBytes,
    sendPingsAutomatically: true,
    compression: native.DISABLED,
    upgrade: (rawRes, req, context) => {
      const res = rawRes as unknown as Response;
      // uWS: everything needed from `req` must be copied before the first await.
      const request = {
        path: req.getUrl(),
        query: req.getQuery(),
        headers: { origin: req.getHeader('origin'), jwt: req.getHeader('jwt') },
        remoteAddress: () => Buffer.from(res.getRemoteAddressAsText()).toString('latin1'),
        forwardedFor: options.readForwardedFor ? forwardedFor(req) : '',
      };
      const refusal = handlers.refuseUpgrade(request);
      if (refusal) {
        writeReply(res, refusal);
        return;
      }
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      let decided: T | null | Promise<T | null>;
      try {
        decided = handlers.upgrade(request);
      } catch (error) {
        decided = Promise.reject(error);
      }
      if (!(decided instanceof Promise)) {
        // Inside uWS's handler: the socket is corked and alive, nothing to watch.
        if (decided === null) writeReply(res, NO_ENDPOINT);
        else res.upgrade<Carrier<T>>({ data: decided }, key, protocol, extensions, context);
        return;
      }
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      decided.then(
        (data) => {
          if (aborted) {
            if (data !== null) handlers.upgradeAborted(data);
            return;
          }
          if (data === null) writeReply(res, NO_ENDPOINT);
          else upgradeLate(res, data, key, protocol, extensions, context);
        },
        () => {
          if (!aborted)
            writeReply(res, {
              status: 500,
              body: JSON.stringify({ success: false, error: 'Internal error' }),
            });
        },
      );
    },
    open: (ws) => {
      if (late) {
        late.ws = ws;
        return;
      }
      anchor ??= ws;
      handlers.open(ws as unknown as Conn, ws.getUserData().data);
    },
    message: (ws, message, isBinary) =>
      handlers.message(ws as unknown as Conn, ws.getUserData().data, message, isBinary),
    drain: (ws) => handlers.drain(ws as unknown as Conn, ws.getUserData().data),
    close: (ws, code) => {
      if (ws === anchor)
        anchor = handlers.anotherOpen(ws as unknown as Conn) as unknown as
          uWS.WebSocket<Carrier<T>> | undefined;
      if (late && late.ws === ws) late.closed = true;
      else handlers.close(ws as unknown as Conn, ws.getUserData().data, code);
    },
  });

  app.any('/*', (rawRes, req) => {
    const res = rawRes as unknown as Response;
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    // Only the headers the cluster API reads, not a copy of every header per request.
    const headers: Record<string, string> = {};
    for (const name of READ_HEADERS) {
      const value = req.getHeader(name);
      if (value) headers[name] = value;
    }
    const forwarded = options.readForwardedFor ? forwardedFor(req) : '';
    if (forwarded) headers['x-forwarded-for'] = forwarded;
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    let peer: string | undefined;
    // uWS throws on any call to a response after it was aborted or ended.
    const remoteAddress = (): string =>
      (peer ??= aborted ? '' : Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
    const respond = (reply: HttpReply): void => {
      if (!aborted) writeReply(res, reply);
      aborted = true;
    };
    const failed = (): void =>
      respond({ status: 500, body: JSON.stringify({ success: false, error: 'Internal error' }) });
    const dispatch = (body: Buffer): void => {
      let reply: HttpReply | Promise<HttpReply>;
      try {
        reply = handlers.http({ method, path, query, headers, body, remoteAddress });
      } catch {
        failed();
        return;
      }
      if (reply instanceof Promise) reply.then(respond, failed);
      else respond(reply);
    };
    if (method === 'GET' || method === 'HEAD') {
      dispatch(Buffer.alloc(0));
      return;
    }
    if (Number(headers['content-length'] ?? 0) > options.maxBodyBytes) {
      respond(handlers.bodyTooLarge(path));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (aborted) return;
      size += chunk.byteLength;
      if (size > options.maxBodyBytes) {
        respond(handlers.bodyTooLarge(path));
        return;
      }
      // uWS reuses the chunk's memory after this callback: copy it (into Node's pooled buffer
      // memory; `chunk.slice(0)` would allocate a new ArrayBuffer per chunk).
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) dispatch(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
  });

  return {
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        app.listen(host, port, (socket) => {
          if (!socket) {
            reject(new Error(`Cannot listen on ${host}:${port}`));
            return;
          }
          listenSocket = socket;
          resolve(native.us_socket_local_port(socket));
        });
      }),
    stopListening: () => {
      if (listenSocket) native.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    publish: (topic, message, isBinary) => {
      app.publish(topic, message, isBinary);
    },
    numSubscribers: (topic) => app.numSubscribers(topic),
    close: () => {
      if (listenSocket) native.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
      (app as unknown as { close(): void }).close();
    },
  };
}
