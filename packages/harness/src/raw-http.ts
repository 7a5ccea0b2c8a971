import { connect } from 'node:net';

export interface RawRequest {
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The client's own address (any 127.0.0.x on Linux): lets one test act as several clients. */
  localAddress?: string;
  /** The request line, e.g. `POST /api/publish HTTP/1.1`. */
  requestLine: string;
  /** Header lines as written, duplicates kept (`X-Forwarded-For: …` twice). `Host` is added. */
  headers: string[];
  body?: string;
}

export interface RawResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 request written byte for byte on a new TCP connection: what `fetch` and `http`
 * cannot send (the same header on several lines, in a chosen order). Resolves with the response
 * once its head and `Content-Length` body arrived (a `101` upgrade: once its head arrived), and
 * closes the connection.
 */
export function rawRequest(request: RawRequest): Promise<RawResponse> {
  const body = request.body ?? '';
  const head = [
    request.requestLine,
    'Host: switchboard',
    ...request.headers,
    ...(body ? [`Content-Length: ${Buffer.byteLength(body)}`] : []),
  ];
  return new Promise((resolve, reject) => {
    const socket = connect({
      port: request.port,
      host: request.host ?? '127.0.0.1',
      ...(request.localAddress ? { localAddress: request.localAddress } : {}),
    });
    let received = Buffer.alloc(0);
    const done = (response: RawResponse): void => {
      socket.destroy();
      resolve(response);
    };
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`${head.join('\r\n')}\r\n\r\n${body}`));
    const parse = (ended: boolean): void => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) {
        if (ended) reject(new Error(`connection closed before a response head: ${received.toString()}`));
        return;
      }
      const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(statusLine.split(' ')[1]);
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = received.subarray(end + 4);
      const length = headers['content-length'];
      if (status === 101 || (length !== undefined && rest.length >= Number(length)) || ended) {
        done({ status, headers, body: rest.toString('utf8') });
      }
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      parse(false);
    });
    socket.once('end', () => parse(true));
  });
}

/** The header lines of a WebSocket upgrade (`rawRequest`'s `headers`), before any others of the test. */
export const UPGRADE_HEADERS = [
  'Upgrade: websocket',
  'Connection: Upgrade',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
  'Sec-WebSocket-Version: 13',
];
