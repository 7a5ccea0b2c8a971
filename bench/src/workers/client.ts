import WebSocket from 'ws';
import { BUCKETS, bucketOf, toSparse } from '../lib/hist';
import { nowUs, seqOf, timestampOf } from '../lib/payload';
import { RawWebSocket } from '../lib/raw-ws';

/**
 * Client process: holds many WebSocket connections (`ws`, no compression), counts benchmark
 * payloads and records publish-to-receive latency in a fixed histogram. Driven over IPC by the
 * harness; every wait is bounded.
 */
export type ClientCommand =
  | {
      cmd: 'connect';
      urls: string[];
      concurrency: number;
      joinMarker?: string;
      timeoutMs: number;
      client: 'raw' | 'ws';
    }
  | { cmd: 'reset'; publishes: number }
  | { cmd: 'stats' }
  | { cmd: 'close'; timeoutMs: number }
  | { cmd: 'exit' };

export interface ConnectReport {
  ok: number;
  failed: number;
  firstError?: string;
  startUs: number;
  /** When the last connection opened (µs, monotonic clock shared by all processes). */
  lastOpenUs: number;
  /** With a join marker: how many saw it, and when the last one did. */
  joined: number;
  lastJoinUs: number;
}

export interface StatsReport {
  received: number;
  other: number;
  closed: number;
  /** Sockets opened by `connect` and closed since (by the server: the harness closes none meanwhile). */
  down: number;
  hist: [number, number][];
  /** Latencies of the first and the last quarter of the step's publishes (is a queue growing?). */
  early: [number, number][];
  late: [number, number][];
}

interface Connection {
  terminate(): void;
  readonly done: boolean;
  onClosed(cb: () => void): void;
}

const sockets: Connection[] = [];
let hist = new Uint32Array(BUCKETS);
let early = new Uint32Array(BUCKETS);
let late = new Uint32Array(BUCKETS);
let quarter = 0;
let lastQuarter = Infinity;
let received = 0;
let other = 0;
let closed = 0;

function reply(message: object): void {
  process.send?.(message);
}

async function connectAll(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<ConnectReport> {
  const report: ConnectReport = {
    ok: 0,
    failed: 0,
    startUs: nowUs(),
    lastOpenUs: 0,
    joined: 0,
    lastJoinUs: 0,
  };
  const marker = command.joinMarker ? Buffer.from(command.joinMarker) : undefined;
  let next = 0;
  const deadline = Date.now() + command.timeoutMs;
  const one = (url: string): Promise<void> =>
    new Promise((resolve) => {
      let settled = false;
      let joined = !marker;
      let opened = false;
      const closeWaiters: (() => void)[] = [];
      const settle = (): void => {
        if (settled) return;
        settled = true;
        resolve();
      };
      const onOpen = (): void => {
        opened = true;
        report.ok++;
        report.lastOpenUs = nowUs();
        if (joined) settle();
      };
      const onMessage = (data: Buffer): void => {
        const t = timestampOf(data);
        if (t >= 0) {
          received++;
          const bucket = bucketOf(nowUs() - t);
          hist[bucket]!++;
          const seq = seqOf(data);
          if (seq < quarter) early[bucket]!++;
          else if (seq >= lastQuarter) late[bucket]!++;
          return;
        }
        other++;
        if (!joined && marker && data.includes(marker)) {
          joined = true;
          report.joined++;
          report.lastJoinUs = nowUs();
          settle();
        }
      };
      const onError = (error: Error): void => {
        if (!settled && !opened) {
          report.failed++;
          report.firstError ??= error.message;
        }
        settle();
      };
      const onClose = (): void => {
        closed++;
        settle();
        for (const cb of closeWaiters.splice(0)) cb();
      };
      if (command.client === 'raw') {
        const ws = new RawWebSocket(url, {
          open: onOpen,
          message: onMessage,
          error: onError,
          close: onClose,
        });
        sockets.push({
          terminate: () => ws.terminate(),
          get done() {
            return ws.closed;
          },
          onClosed: (cb) => closeWaiters.push(cb),
        });
      } else {
        const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: command.timeoutMs });
        ws.on('open', onOpen);
        ws.on('message', onMessage);
        ws.on('error', onError);
        ws.on('close', onClose);
        sockets.push({
          terminate: () => ws.terminate(),
          get done() {
            return ws.readyState === WebSocket.CLOSED;
          },
          onClosed: (cb) => closeWaiters.push(cb),
        });
      }
    });
  const lane = async (): Promise<void> => {
    while (next < command.urls.length && Date.now() < deadline) await one(command.urls[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, command.concurrency) }, lane));
  report.failed = Math.max(0, command.urls.length - report.ok);
  return report;
}

async function closeAll(timeoutMs: number): Promise<number> {
  const all = sockets.splice(0);
  const deadline = Date.now() + timeoutMs;
  const waits = all.map(
    (ws) =>
      new Promise<void>((resolve) => {
        if (ws.done) return resolve();
        ws.onClosed(resolve);
        ws.terminate();
      }),
  );
  await Promise.race([
    Promise.all(waits),
    new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()))),
  ]);
  return all.length;
}

process.on('message', (command: ClientCommand) => {
  switch (command.cmd) {
    case 'connect':
      void connectAll(command).then((report) => reply({ cmd: 'connected', report }));
      break;
    case 'reset':
      hist = new Uint32Array(BUCKETS);
      early = new Uint32Array(BUCKETS);
      late = new Uint32Array(BUCKETS);
      quarter = Math.floor(command.publishes / 4);
      lastQuarter = command.publishes - quarter;
      received = 0;
      other = 0;
      closed = 0;
      reply({ cmd: 'reset' });
      break;
    case 'stats': {
      const stats: StatsReport = {
        received,
        other,
        closed,
        down: sockets.reduce((n, ws) => (ws.done ? n + 1 : n), 0),
        hist: toSparse(hist),
        early: toSparse(early),
        late: toSparse(late),
      };
      reply({ cmd: 'stats', stats });
      break;
    }
    case 'close':
      void closeAll(command.timeoutMs).then((count) => reply({ cmd: 'closed', count }));
      break;
    case 'exit':
      process.exit(0);
  }
});
