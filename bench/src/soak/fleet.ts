import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from '../lib/procs';

const SOURCE = join(ROOT, 'bench', 'native', 'churn-load.c');
const BINARY = join(ROOT, 'bench', 'dist', 'native', 'churn-load');

/** Compiles bench/native/churn-load.c when its binary is missing or older. */
export function buildChurnClient(): string {
  if (!existsSync(BINARY) || statSync(BINARY).mtimeMs < statSync(SOURCE).mtimeMs) {
    mkdirSync(join(BINARY, '..'), { recursive: true });
    execFileSync('cc', ['-O2', '-Wall', '-o', BINARY, SOURCE], { stdio: 'pipe' });
  }
  return BINARY;
}

/** What one soak socket is: who it presents itself as, where. */
export interface ConnSpec {
  readonly key: string;
  readonly protocol: 'v3' | 'v4';
  readonly channel: string;
  /** Set on presence sockets: `presence=1&user=<user>`. */
  readonly user?: string;
  /** Index of the gateway it connects to. */
  readonly node: number;
}

export interface Conn extends ConnSpec {
  readonly serial: number;
  readonly id: number;
  state: 'opening' | 'open';
  /** Position in the fleet's list of open sockets (for O(1) random picks and removal). */
  index: number;
  /** Set once a kick that matches it was sent while it was open. */
  kickedAt?: number;
  /** When its 101 arrived (ms, Date.now()). */
  openedAt?: number;
}

export interface FleetCounters {
  opened: number;
  closedByClient: number;
  failed: number;
  failures: Record<string, number>;
  /** Server-side closes of open sockets, by close code. */
  gone: Record<string, number>;
}

/**
 * The soak's sockets, held by `churn-load` processes (one command line in, events out). Ids are
 * reused once a socket is done; the socket's worker is `id % workers`. The fleet's own view
 * (`open`) is what the load generator really holds: a socket is open from its 101 until the client
 * closed it or saw the server close it.
 */
export class ChurnFleet {
  private readonly children: ChildProcess[] = [];
  private readonly byId = new Map<number, Conn>();
  private readonly freeIds: number[] = [];
  private nextId = 0;
  private serial = 0;
  readonly openList: Conn[] = [];
  opening = 0;
  /** Sockets opened or opening, per API key. */
  private readonly heldByKey = new Map<string, number>();
  readonly counters: FleetCounters = { opened: 0, closedByClient: 0, failed: 0, failures: {}, gone: {} };
  private statsWaiters: ((s: { open: number; frames: number; bytes: number; pings: number }) => void)[][];
  /** Called when the server closes an open socket (after the fleet forgot it). */
  onGone: (conn: Conn, code: number) => void = () => undefined;

  constructor(
    workers: number,
    private readonly ports: number[],
  ) {
    const binary = buildChurnClient();
    this.statsWaiters = [];
    for (let w = 0; w < workers; w++) {
      const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
      createInterface({ input: child.stdout! }).on('line', (line) => this.event(line));
      this.children.push(child);
    }
  }

  get pids(): number[] {
    return this.children.map((c) => c.pid ?? 0);
  }

  /** Sockets of `key` opened or opening. */
  held(key: string): number {
    return this.heldByKey.get(key) ?? 0;
  }

  private worker(id: number): ChildProcess {
    return this.children[id % this.children.length]!;
  }

  open(spec: ConnSpec): Conn {
    const id = this.freeIds.pop() ?? this.nextId++;
    const conn: Conn = { ...spec, serial: this.serial++, id, state: 'opening', index: -1 };
    this.byId.set(id, conn);
    this.opening++;
    this.heldByKey.set(spec.key, this.held(spec.key) + 1);
    const query = spec.user ? `&presence=1&user=${encodeURIComponent(spec.user)}` : '';
    this.worker(id).stdin!.write(
      `o ${id} ${conn.serial} ${this.ports[spec.node]} /${spec.protocol}/${spec.channel}?api_key=${spec.key}${query}\n`,
    );
    return conn;
  }

  close(conn: Conn): void {
    if (conn.state !== 'open' || this.byId.get(conn.id) !== conn) return;
    this.worker(conn.id).stdin!.write(`c ${conn.id} ${conn.serial}\n`);
    this.counters.closedByClient++;
    this.forget(conn);
  }

  /** A random open socket, or undefined when none is. */
  pick(random: () => number = Math.random): Conn | undefined {
    return this.openList[Math.floor(random() * this.openList.length)];
  }

  /** Worker counters summed: sockets open as the workers see them, frames and bytes received. */
  stats(): Promise<{ open: number; frames: number; bytes: number; pings: number }> {
    return new Promise((resolve) => {
      const batch: ((s: { open: number; frames: number; bytes: number; pings: number }) => void)[] = [];
      let left = this.children.length;
      const sum = { open: 0, frames: 0, bytes: 0, pings: 0 };
      for (let w = 0; w < this.children.length; w++) {
        batch.push((s) => {
          sum.open += s.open;
          sum.frames += s.frames;
          sum.bytes += s.bytes;
          sum.pings += s.pings;
          if (--left === 0) resolve(sum);
        });
      }
      this.statsWaiters.push(batch);
      for (const child of this.children) child.stdin!.write('s\n');
    });
  }

  private forget(conn: Conn): void {
    this.byId.delete(conn.id);
    this.freeIds.push(conn.id);
    this.heldByKey.set(conn.key, this.held(conn.key) - 1);
    if (conn.state === 'opening') {
      this.opening--;
      return;
    }
    const last = this.openList.pop()!;
    if (last !== conn) {
      this.openList[conn.index] = last;
      last.index = conn.index;
    }
    conn.index = -1;
  }

  private event(line: string): void {
    const kind = line[0];
    if (kind === 's') {
      const batch = this.statsWaiters[0];
      const stats = JSON.parse(line.slice(2)) as {
        open: number;
        frames: number;
        bytes: number;
        pings: number;
      };
      const done = batch?.shift();
      if (batch && batch.length === 0) this.statsWaiters.shift();
      done?.(stats);
      return;
    }
    const [, idText, tagText, ...words] = line.split(' ');
    const rest = words.join(' ');
    const conn = this.byId.get(Number(idText));
    // A stale event: the socket it names was already closed by the client, its id reused.
    if (!conn || conn.serial !== Number(tagText)) return;
    if (kind === 'o') {
      this.opening--;
      conn.state = 'open';
      conn.openedAt = Date.now();
      conn.index = this.openList.length;
      this.openList.push(conn);
      this.counters.opened++;
    } else if (kind === 'f') {
      this.counters.failed++;
      this.counters.failures[rest] = (this.counters.failures[rest] ?? 0) + 1;
      this.forget(conn);
    } else if (kind === 'g') {
      this.counters.gone[rest] = (this.counters.gone[rest] ?? 0) + 1;
      this.forget(conn);
      this.onGone(conn, Number(rest));
    }
  }

  /** Closes every socket (client closes) and ends the workers. */
  closeAll(): void {
    for (const conn of [...this.openList]) this.close(conn);
  }

  stop(): void {
    for (const child of this.children) {
      child.stdin!.end();
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    }
  }
}
