import { BUCKETS, bucketOf, toSparse } from '../lib/hist';
import { nowUs } from '../lib/payload';

/**
 * What every client process (workers/client.ts, workers/pusher-client.ts) shares: the IPC
 * commands and reports `ClientFleet` drives them with, and the counters and latency histograms
 * behind `reset` and `stats`. A worker brings only how it opens and closes its connections.
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

/** Where a worker's connections report what they receive; counts reset with each `reset`. */
export interface ClientRecorder {
  /** A benchmark payload published at `t` (µs, shared monotonic clock), the step's publish `seq`. */
  delivery(t: number, seq: number): void;
  /** Any other message. */
  other(): void;
  /** A connection closed. */
  closed(): void;
}

export interface ClientWorker {
  connectAll(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<ConnectReport>;
  /** Closes every connection (bounded by `timeoutMs`); resolves with how many there were. */
  closeAll(timeoutMs: number): Promise<number>;
  /** How many of the connections opened so far are closed. */
  down(): number;
}

let hist = new Uint32Array(BUCKETS);
let early = new Uint32Array(BUCKETS);
let late = new Uint32Array(BUCKETS);
let quarter = 0;
let lastQuarter = Infinity;
let received = 0;
let other = 0;
let closed = 0;

/** The recorder of this process: one per process, as there is one worker per process. */
export const recorder: ClientRecorder = {
  delivery(t, seq) {
    received++;
    const bucket = bucketOf(nowUs() - t);
    hist[bucket]!++;
    if (seq < quarter) early[bucket]!++;
    else if (seq >= lastQuarter) late[bucket]!++;
  },
  other: () => void other++,
  closed: () => void closed++,
};

const reply = (message: object): void => void process.send?.(message);

/** Answers the harness's IPC commands with `worker` for this process's lifetime. */
export function serveClientCommands(worker: ClientWorker): void {
  process.on('message', (command: ClientCommand) => {
    switch (command.cmd) {
      case 'connect':
        void worker.connectAll(command).then((report) => reply({ cmd: 'connected', report }));
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
          down: worker.down(),
          hist: toSparse(hist),
          early: toSparse(early),
          late: toSparse(late),
        };
        reply({ cmd: 'stats', stats });
        break;
      }
      case 'close':
        void worker.closeAll(command.timeoutMs).then((count) => reply({ cmd: 'closed', count }));
        break;
      case 'exit':
        process.exit(0);
    }
  });
}
