import { connect } from 'node:net';
import type { Socket } from 'node:net';

/**
 * A minimal HTTP/1.1 keep-alive client on a raw socket: one request in flight per connection,
 * responses framed by Content-Length. Much cheaper per request than node:http, so the publisher
 * is not what limits a benchmark.
 */
export interface HttpResult {
  status: number;
  body: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export class KeepAliveConnection {
  private socket: Socket | undefined;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: ((result: HttpResult | Error) => void) | undefined;
  busy = false;

  constructor(
    readonly host: string,
    readonly port: number,
  ) {}

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.port, this.host, () => resolve());
      socket.setNoDelay(true);
      // A reopened connection ignores what its previous socket reports.
      socket.once('error', (error) => {
        reject(error);
        if (this.socket === socket) this.fail(error);
      });
      socket.on('close', () => {
        if (this.socket === socket) this.fail(new Error('connection closed'));
      });
      socket.on('data', (chunk: Buffer) => this.onData(chunk));
      this.socket = socket;
    });
  }

  private fail(error: Error): void {
    this.socket = undefined;
    const pending = this.pending;
    this.pending = undefined;
    this.busy = false;
    pending?.(error);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const end = this.buffer.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.buffer.toString('latin1', 0, end);
    const match = /content-length:\s*(\d+)/i.exec(head);
    const length = match ? Number(match[1]) : 0;
    if (this.buffer.length < end + 4 + length) return;
    const status = Number(head.slice(9, 12));
    const body = this.buffer.toString('utf8', end + 4, end + 4 + length);
    this.buffer = this.buffer.subarray(end + 4 + length);
    // `Connection: close` (Soketi answers every HTTP API request so): not reusable; `open()` again.
    if (/\r\nconnection:\s*close/i.test(head)) {
      this.socket?.destroy();
      this.socket = undefined;
      this.buffer = Buffer.alloc(0);
    }
    const pending = this.pending;
    this.pending = undefined;
    this.busy = false;
    pending?.({ status, body });
  }

  get alive(): boolean {
    return this.socket !== undefined;
  }

  /** Sends a request (the connection must not be busy); `done` gets the response or an error. */
  send(request: string, done: (result: HttpResult | Error) => void): void {
    if (!this.socket) {
      done(new Error('not connected'));
      return;
    }
    this.busy = true;
    this.pending = done;
    this.socket.write(request);
  }

  request(request: string): Promise<HttpResult> {
    return new Promise((resolve, reject) =>
      this.send(request, (result) => (result instanceof Error ? reject(result) : resolve(result))),
    );
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }
}

export function postRequest(host: string, port: number, path: string, body: string): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** One request on a fresh connection. */
export async function postOnce(host: string, port: number, path: string, body: unknown): Promise<HttpResult> {
  const connection = new KeepAliveConnection(host, port);
  await connection.open();
  try {
    return await connection.request(postRequest(host, port, path, JSON.stringify(body)));
  } finally {
    connection.close();
  }
}
