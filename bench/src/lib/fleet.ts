import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { ClientCommand, ConnectReport, StatsReport } from '../workers/client';
import type { PublishResult, PublishSpec } from './publish-loop';
import { BUCKETS, mergeSparse, percentiles } from './hist';
import type { Percentiles } from './hist';

/** A forked helper process with a request/response IPC channel (one request at a time). */
export class Worker {
  private readonly child: ChildProcess;
  private waiting: ((message: Record<string, unknown>) => void) | undefined;

  constructor(script: string) {
    this.child = fork(join(__dirname, '..', 'workers', script), [], {
      execArgv: ['--max-old-space-size=2048'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (message: Record<string, unknown>) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting?.(message);
    });
  }

  request<T>(command: object, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        reject(
          new Error(`worker did not answer ${JSON.stringify(command).slice(0, 80)} within ${timeoutMs} ms`),
        );
      }, timeoutMs);
      this.waiting = (message) => {
        clearTimeout(timer);
        if (message['cmd'] === 'error') reject(new Error(String(message['error'])));
        else resolve(message as T);
      };
      this.child.send(command);
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  kill(): void {
    this.child.send({ cmd: 'exit' }, () => undefined);
    setTimeout(() => this.child.kill('SIGKILL'), 2000).unref();
  }
}

export interface ConnectSummary {
  ok: number;
  failed: number;
  firstError?: string;
  /** From the first connect to the last open (or last join marker), seconds. */
  openSeconds: number;
  joinSeconds: number;
  joined: number;
}

export interface DeliveryStats extends Percentiles {
  received: number;
  /** Subscriber sockets closed since they connected (a loss is theirs when this is not 0). */
  down: number;
  /** Latency of the first and last quarter of the step's publishes. */
  early: Percentiles;
  late: Percentiles;
}

export type ClientKind = 'raw' | 'ws';
/** The client implementation every fleet uses (`--client`). */
export const fleetDefaults: { client: ClientKind } = { client: 'raw' };

/** One summary of the connect reports of several client processes (their clocks are shared). */
export function summarize(reports: ConnectReport[]): ConnectSummary {
  const start = Math.min(...reports.map((r) => r.startUs));
  const firstError = reports.find((r) => r.firstError)?.firstError;
  return {
    ok: reports.reduce((s, r) => s + r.ok, 0),
    failed: reports.reduce((s, r) => s + r.failed, 0),
    ...(firstError ? { firstError } : {}),
    openSeconds: (Math.max(...reports.map((r) => r.lastOpenUs)) - start) / 1e6,
    joinSeconds: (Math.max(...reports.map((r) => r.lastJoinUs)) - start) / 1e6,
    joined: reports.reduce((s, r) => s + r.joined, 0),
  };
}

/** The client processes: connections spread over them round-robin. */
export class ClientFleet {
  private readonly workers: Worker[];

  constructor(
    count: number,
    private readonly client: ClientKind = fleetDefaults.client,
    /** The client process: `client.js`, or `pusher-client.js` for Pusher-protocol subscribers. */
    script = 'client.js',
  ) {
    this.workers = Array.from({ length: count }, () => new Worker(script));
  }

  private all<T>(command: ClientCommand, timeoutMs: number): Promise<T[]> {
    return Promise.all(this.workers.map((w) => w.request<T>(command, timeoutMs)));
  }

  async connect(
    urls: string[],
    options: { concurrency: number; joinMarker?: string; timeoutMs?: number },
  ): Promise<ConnectSummary> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const parts: string[][] = this.workers.map(() => []);
    urls.forEach((url, i) => parts[i % parts.length]!.push(url));
    const replies = await Promise.all(
      this.workers.map((w, i) =>
        w.request<{ report: ConnectReport }>(
          {
            cmd: 'connect',
            urls: parts[i]!,
            concurrency: Math.ceil(options.concurrency / this.workers.length),
            client: this.client,
            ...(options.joinMarker ? { joinMarker: options.joinMarker } : {}),
            timeoutMs,
          },
          timeoutMs + 10_000,
        ),
      ),
    );
    return summarize(replies.map((r) => r.report));
  }

  /** Zeroes the counters; `publishes` is the step's expected publish count (its quarters are tracked). */
  async reset(publishes = 0): Promise<void> {
    await this.all({ cmd: 'reset', publishes }, 10_000);
  }

  async stats(): Promise<DeliveryStats> {
    const replies = await this.all<{ stats: StatsReport }>({ cmd: 'stats' }, 10_000);
    const hist = new Float64Array(BUCKETS);
    const early = new Float64Array(BUCKETS);
    const late = new Float64Array(BUCKETS);
    let received = 0;
    let down = 0;
    for (const { stats } of replies) {
      received += stats.received;
      down += stats.down;
      mergeSparse(hist, stats.hist);
      mergeSparse(early, stats.early);
      mergeSparse(late, stats.late);
    }
    return { received, down, ...percentiles(hist), early: percentiles(early), late: percentiles(late) };
  }

  async closeAll(): Promise<void> {
    await this.all({ cmd: 'close', timeoutMs: 10_000 }, 20_000);
  }

  get pids(): number[] {
    return this.workers.map((w) => w.pid);
  }

  stop(): void {
    for (const w of this.workers) w.kill();
  }
}

export class Publisher {
  private readonly worker = new Worker('publisher.js');

  async run(spec: PublishSpec): Promise<PublishResult> {
    const reply = await this.worker.request<{ result: PublishResult }>(
      { cmd: 'run', spec },
      spec.durationMs + 15_000,
    );
    return reply.result;
  }

  get pid(): number {
    return this.worker.pid;
  }

  stop(): void {
    this.worker.kill();
  }
}
