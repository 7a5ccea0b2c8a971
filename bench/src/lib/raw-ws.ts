import { connect } from 'node:net';
import type { Socket } from 'node:net';

/**
 * A minimal RFC 6455 client on a raw TCP socket: the real handshake and framing, nothing else
 * (no extensions, no fragmentation — uWS never fragments what it sends; pings answered with
 * pongs). It costs a fraction of `ws` per connection and per frame, so on a 2-core machine the
 * load generator takes less CPU away from the servers. `--client ws` uses the `ws` package.
 */
export interface RawWsHandlers {
  open(): void;
  message(payload: Buffer): void;
  error(error: Error): void;
  close(): void;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const PONG_EMPTY = Buffer.from([0x8a, 0x80, 0, 0, 0, 0]);

export class RawWebSocket {
  private readonly socket: Socket;
  private buffer: Buffer | undefined;
  private upgraded = false;
  private done = false;
  /** The code of the server's close frame, once one arrived (1005 when it carried none). */
  closeCode: number | undefined;

  constructor(
    url: string,
    private readonly handlers: RawWsHandlers,
  ) {
    const parsed = new URL(url);
    const port = Number(parsed.port || 80);
    this.socket = connect(port, parsed.hostname, () => {
      this.socket.write(
        `GET ${parsed.pathname}${parsed.search} HTTP/1.1\r\nHost: ${parsed.host}\r\nUpgrade: websocket\r\n` +
          'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      );
    });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error) => this.finish(error));
    this.socket.on('close', () => this.finish());
  }

  private finish(error?: Error): void {
    if (this.done) return;
    this.done = true;
    if (error && !this.upgraded) this.handlers.error(error);
    this.handlers.close();
  }

  private onData(chunk: Buffer): void {
    let data = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
    this.buffer = undefined;
    if (!this.upgraded) {
      const end = data.indexOf(HEADER_END);
      if (end < 0) {
        this.buffer = data;
        return;
      }
      const head = data.toString('latin1', 0, end);
      if (!head.startsWith('HTTP/1.1 101')) {
        this.handlers.error(new Error(`handshake refused: ${head.split('\r\n')[0]}`));
        this.done = true;
        this.socket.destroy();
        return;
      }
      this.upgraded = true;
      this.handlers.open();
      data = data.subarray(end + 4);
    }
    let offset = 0;
    while (data.length - offset >= 2) {
      const b0 = data[offset]!;
      let length = data[offset + 1]! & 0x7f;
      let start = offset + 2;
      if (length === 126) {
        if (data.length - offset < 4) break;
        length = data.readUInt16BE(offset + 2);
        start = offset + 4;
      } else if (length === 127) {
        if (data.length - offset < 10) break;
        length = Number(data.readBigUInt64BE(offset + 2));
        start = offset + 10;
      }
      if (data.length < start + length) break;
      const opcode = b0 & 0x0f;
      const payload = data.subarray(start, start + length);
      offset = start + length;
      if (opcode === 1 || opcode === 2 || opcode === 0) this.handlers.message(payload);
      else if (opcode === 9) this.pong(payload);
      else if (opcode === 8) {
        this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
        this.socket.end();
        return;
      }
    }
    if (offset < data.length) this.buffer = Buffer.from(data.subarray(offset));
  }

  private pong(payload: Buffer): void {
    if (payload.length === 0) {
      this.socket.write(PONG_EMPTY);
      return;
    }
    // Masked with a zero key: the payload bytes stay as they are.
    this.socket.write(Buffer.concat([Buffer.from([0x8a, 0x80 | payload.length, 0, 0, 0, 0]), payload]));
  }

  /** Sends a text frame (masked with a zero key, so the bytes go as they are). */
  send(text: string): void {
    if (this.done || !this.upgraded) return;
    const payload = Buffer.from(text);
    const n = payload.length;
    const head =
      n < 126
        ? Buffer.from([0x81, 0x80 | n, 0, 0, 0, 0])
        : n < 65_536
          ? Buffer.from([0x81, 0x80 | 126, n >> 8, n & 0xff, 0, 0, 0, 0])
          : undefined;
    if (!head) throw new Error('RawWebSocket.send: frames of 64 KiB and more are not supported');
    this.socket.write(Buffer.concat([head, payload]));
  }

  get closed(): boolean {
    return this.done;
  }

  terminate(): void {
    this.socket.destroy();
  }
}
