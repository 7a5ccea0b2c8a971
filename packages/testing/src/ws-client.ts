import WebSocket from 'ws';

export interface Received {
  readonly text: string;
  readonly binary: boolean;
  /** Parsed JSON, or undefined when the frame is not JSON. */
  readonly json: Record<string, unknown> | undefined;
}

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

/**
 * A real WebSocket client for tests: every frame is recorded, and tests await the next frame
 * matching a predicate (no sleeps). `expectSilence` is the only timed wait and proves absence.
 */
export class TestClient {
  readonly socket: WebSocket;
  readonly received: Received[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<Closed>;
  /** How the socket closed, once it has (for failure messages). */
  private closeInfo: Closed | undefined;
  private cursor = 0;
  private waiters: Array<() => void> = [];

  constructor(url: string, headers: Record<string, string> = {}) {
    this.socket = new WebSocket(url, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
    this.closed = new Promise((resolve) => {
      this.socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    this.socket.on('error', () => undefined);
    this.socket.on('message', (data, isBinary) => {
      const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      const text = buffer.toString(isBinary ? 'base64' : 'utf8');
      let json: Record<string, unknown> | undefined;
      if (!isBinary) {
        try {
          const value: unknown = JSON.parse(text);
          if (value && typeof value === 'object') json = value as Record<string, unknown>;
        } catch {
          json = undefined;
        }
      }
      this.received.push({ text, binary: isBinary, json });
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.socket.once('close', (code, reason) => {
      this.closeInfo = { code, reason: reason.toString() };
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  send(data: string | Buffer | Record<string, unknown>): void {
    this.socket.send(typeof data === 'string' || Buffer.isBuffer(data) ? data : JSON.stringify(data));
  }

  /** The next frame (after the ones already consumed) that matches; earlier ones are skipped. */
  async next(match: (frame: Received) => boolean = () => true, timeoutMs = 5000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.received.length) {
        const frame = this.received[this.cursor++]!;
        if (match(frame)) return frame;
      }
      if (this.socket.readyState === WebSocket.CLOSED)
        throw new Error(
          `socket closed (${this.closeInfo?.code ?? '?'} ${this.closeInfo?.reason ?? ''}) while waiting; got ${this.describe()}`,
        );
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`no matching frame within ${timeoutMs} ms; got ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The next frame whose `event` equals `event`. */
  nextEvent(event: string, timeoutMs?: number): Promise<Received> {
    return this.next((frame) => frame.json?.['event'] === event, timeoutMs);
  }

  /** Resolves when nothing matching arrives within `ms` (for asserting absence). */
  async expectSilence(match: (frame: Received) => boolean = () => true, ms = 200): Promise<void> {
    const start = this.received.length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    const unexpected = this.received.slice(start).filter(match);
    if (unexpected.length > 0)
      throw new Error(`unexpected frames: ${unexpected.map((f) => f.text).join(' | ')}`);
  }

  close(): void {
    this.socket.close();
  }

  private describe(): string {
    return JSON.stringify(this.received.map((f) => f.text));
  }
}

export async function connectClient(url: string, headers?: Record<string, string>): Promise<TestClient> {
  const client = new TestClient(url, headers);
  await client.opened;
  return client;
}
