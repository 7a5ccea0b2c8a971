import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ClientFleet, summarize } from './fleet';
import type { ConnectSummary } from './fleet';
import type { ConnectReport } from '../workers/client';
import { ROOT, fdLimitPrefix } from './procs';

/** What the connection-rate scenarios need of a client fleet. */
export interface ConnectFleet {
  connect(urls: string[], options: { concurrency: number; joinMarker?: string }): Promise<ConnectSummary>;
  closeAll(): Promise<void>;
  readonly pids: number[];
  stop(): void;
}

const SOURCE = join(ROOT, 'bench', 'native', 'connect-load.c');
const BINARY = join(ROOT, 'bench', 'dist', 'native', 'connect-load');

/** `--connect-client`: the native client when it builds, or the Node one (`node`). */
export const connectDefaults: { client: 'native' | 'node' } = { client: 'native' };

let built: boolean | undefined;

/** Compiles bench/native/connect-load.c once per harness run (when newer than its binary). */
function buildNative(log: (line: string) => void): boolean {
  if (built !== undefined) return built;
  try {
    if (!existsSync(BINARY) || statSync(BINARY).mtimeMs < statSync(SOURCE).mtimeMs) {
      mkdirSync(join(BINARY, '..'), { recursive: true });
      execFileSync('cc', ['-O2', '-Wall', '-o', BINARY, SOURCE], { stdio: 'pipe' });
    }
    built = true;
  } catch (error) {
    log(`  native connect client unavailable (${String(error).split('\n')[0]}); using the Node client`);
    built = false;
  }
  return built;
}

/**
 * The fleet for connection and join rates: native `connect-load` processes (see its header for
 * why) when a C compiler is on the machine, else the Node client fleet.
 */
export function connectFleet(workers: number, log: (line: string) => void): ConnectFleet {
  if (connectDefaults.client === 'native' && buildNative(log)) return new NativeFleet(workers);
  return new ClientFleet(workers);
}

/** One `connect-load` process: a command line on stdin, one JSON reply line on stdout. */
class NativeWorker {
  private readonly child: ChildProcess;
  private readonly waiting: ((line: string) => void)[] = [];

  constructor(fdLimit?: number) {
    this.child = fdLimit
      ? spawn('bash', ['-c', `${fdLimitPrefix(fdLimit)}exec "$0"`, BINARY], {
          stdio: ['pipe', 'pipe', 'inherit'],
        })
      : spawn(BINARY, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.waiting.shift()?.(line));
  }

  request<T>(text: string, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`connect-load did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiting.push((line) => {
        clearTimeout(timer);
        resolve(JSON.parse(line) as T);
      });
      this.child.stdin!.write(text);
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  stop(): void {
    this.child.stdin!.end();
    setTimeout(() => this.child.kill('SIGKILL'), 2000).unref();
  }
}

/** What one `deliveries` reply of a `connect-load` process holds (see its header). */
export interface DeliveryReport {
  open: number;
  seen: number;
  dropped: number;
  /** Arrival minus the given start, µs, sorted. */
  us: number[];
}

/**
 * The native fleet with the scale scenario's commands too: source addresses, and the arrival time
 * of one marked frame on every socket. Throws when the native client does not build.
 */
export function nativeFleet(
  workers: number,
  log: (line: string) => void,
  options: { fdLimit?: number } = {},
): NativeFleet {
  if (!buildNative(log)) throw new Error('the native connect-load client does not build (is cc installed?)');
  return new NativeFleet(workers, options.fdLimit);
}

export class NativeFleet implements ConnectFleet {
  private readonly workers: NativeWorker[];

  constructor(count: number, fdLimit?: number) {
    this.workers = Array.from({ length: count }, () => new NativeWorker(fdLimit));
  }

  /**
   * Worker w binds its sockets to `count` consecutive addresses from 127.(1 + w).0.1, so no two
   * workers share a source address and each address has its own ephemeral ports.
   */
  async spreadSources(count: number): Promise<void> {
    await Promise.all(this.workers.map((w, i) => w.request(`sources 127.${1 + i}.0.1 ${count}\n`, 5000)));
  }

  /** Every open socket records when `marker` first arrives from now on; resolves with the open count. */
  async watch(marker: string): Promise<number> {
    const replies = await Promise.all(
      this.workers.map((w) => w.request<{ watching: number }>(`watch ${marker}\n`, 10_000)),
    );
    return replies.reduce((sum, r) => sum + r.watching, 0);
  }

  /** Waits until every open socket saw the watched marker (or `timeoutMs`); arrivals minus `sinceUs`. */
  async deliveries(sinceUs: number, timeoutMs: number): Promise<DeliveryReport> {
    const replies = await Promise.all(
      this.workers.map((w) =>
        w.request<DeliveryReport>(`deliveries ${sinceUs} ${timeoutMs}\n`, timeoutMs + 10_000),
      ),
    );
    const us = replies.flatMap((r) => r.us).sort((a, b) => a - b);
    return {
      open: replies.reduce((sum, r) => sum + r.open, 0),
      seen: replies.reduce((sum, r) => sum + r.seen, 0),
      dropped: replies.reduce((sum, r) => sum + r.dropped, 0),
      us,
    };
  }

  async connect(
    urls: string[],
    options: { concurrency: number; joinMarker?: string; timeoutMs?: number },
  ): Promise<ConnectSummary> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const lines: string[][] = this.workers.map(() => []);
    let host = '127.0.0.1';
    urls.forEach((url, i) => {
      const parsed = new URL(url);
      host = parsed.hostname;
      lines[i % lines.length]!.push(`${parsed.port || 80} ${parsed.pathname}${parsed.search}`);
    });
    const marker = options.joinMarker ?? '-';
    const concurrency = Math.ceil(options.concurrency / this.workers.length);
    const reports = await Promise.all(
      this.workers.map((w, i) =>
        w.request<ConnectReport>(
          `connect ${host} ${concurrency} ${timeoutMs} ${marker}\n${lines[i]!.join('\n')}\n.\n`,
          timeoutMs + 10_000,
        ),
      ),
    );
    return summarize(reports);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.request('close\n', 20_000)));
  }

  get pids(): number[] {
    return this.workers.map((w) => w.pid);
  }

  stop(): void {
    for (const w of this.workers) w.stop();
  }
}
