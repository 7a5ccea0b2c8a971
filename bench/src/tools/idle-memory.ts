import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runMain } from '@switchboard/harness';
import { ClientFleet } from '../lib/fleet';
import { gitCommit } from '../lib/machine';
import { HOST, ROOT, product, rssKiB, startNode, startSystem } from '../lib/procs';
import type { ServerProcess, SystemName } from '../lib/procs';

/**
 * Idle memory per connection, and its floor (docs/performance.md, "Idle memory per connection"):
 *
 *   npm run bench:idle-memory [-- --connections N --slope LOW,HIGH
 *     --systems floor,floor-topic,v3,pusher --runs N --server-flags "FLAGS" --server-env K=V,…
 *     --gc on|off --dump DIR --product-dir DIR]
 *
 * One server process, idle sockets from 2 client processes (10 a channel), and what they cost
 * it: RSS and V8's heap (used, and external + array buffers), each read after two full GCs
 * (`--expose-gc`, bench/src/tools/memory-probe.ts), before the sockets (after a warm-up of 50
 * opened and closed) and as they open, in steps: at LOW, at `connections` and at HIGH sockets
 * (5,000, 10,000 and 15,000 by default). Two figures per connection:
 *
 * - from the baseline: (reading at `connections` − baseline) / sockets, the tool's first figure;
 *   it charges the sockets with whatever the process grows once under a connection burst (code,
 *   V8's young generation, the malloc arenas of V8's background compiler threads, hash tables
 *   doubling);
 * - the slope: (reading at HIGH − reading at LOW) / (HIGH − LOW), what one more socket costs once
 *   the process holds LOW of them (docs/benchmarks.md, "Idle memory", says why the benchmark's rows
 *   are judged on it).
 *
 * - `floor`: a bare uWebSockets.js server (bench/src/tools/bare-uws.ts), an empty user data object;
 * - `floor-topic`: the same, each socket subscribed to its channel's uWS topic, as every idle
 *   subscriber of the gateway is;
 * - `v3`: a Switchboard gateway on Redis, PieSocket V3 sockets (`/v3/{channel}`);
 * - `pusher`: a Switchboard gateway on Redis, Pusher sockets subscribed by `pusher:subscribe`.
 *
 * `--gc off` reads without collecting garbage first, as the benchmark's memory rows read
 * (bench/src/scenarios/memory/run.ts): what the process holds then, garbage included.
 * `--server-flags` adds Node flags to every server (after the product's own), `--server-env` adds
 * environment variables (such as MALLOC_ARENA_MAX=1), to try what they change. `--dump DIR` writes
 * each reading's `/proc/<pid>/smaps` and `v8.getHeapSpaceStatistics()` to DIR (one JSON file per
 * case), to see where the memory went.
 *
 * Writes bench/results/tmp/<date>-idle-memory.json (not committed; copy a run worth keeping into
 * bench/results/). A measuring tool, not a test: figures move with the machine (glibc's
 * allocator, V8's version, the young generation's size when read).
 */
type Target = 'floor' | 'floor-topic' | 'v3' | 'pusher';
const TARGETS: readonly Target[] = ['floor', 'floor-topic', 'v3', 'pusher'];

interface Options {
  connections: number;
  /** The two socket counts of the slope (`--slope off`: none). */
  slope: [number, number] | undefined;
  targets: Target[];
  runs: number;
  settleMs: number;
  serverFlags: string;
  serverEnv: Record<string, string>;
  dump: string | undefined;
  /** Two full GCs before each reading (`--gc off`: none, as the benchmark's memory rows read). */
  gc: boolean;
}

function parse(argv: string[]): Options {
  const o: Options = {
    connections: 10_000,
    slope: [5_000, 15_000],
    targets: [...TARGETS],
    runs: 1,
    settleMs: 1500,
    serverFlags: '',
    serverEnv: {},
    dump: undefined,
    gc: true,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1] ?? '';
    if (flag === '--connections') o.connections = Math.max(1, Number(value));
    else if (flag === '--runs') o.runs = Math.max(1, Number(value));
    else if (flag === '--settle') o.settleMs = Math.max(0, Number(value));
    else if (flag === '--product-dir') product.dir = resolve(value);
    else if (flag === '--server-flags') o.serverFlags = value;
    else if (flag === '--dump') o.dump = resolve(value);
    else if (flag === '--gc') {
      if (value !== 'on' && value !== 'off') throw new Error(`--gc: on or off, not ${value}`);
      o.gc = value === 'on';
    } else if (flag === '--server-env') {
      for (const pair of value.split(',').filter(Boolean)) {
        const eq = pair.indexOf('=');
        if (eq < 1) throw new Error(`--server-env: ${pair} is not NAME=VALUE`);
        o.serverEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
    } else if (flag === '--slope') {
      if (value === 'off') o.slope = undefined;
      else {
        const [low, high] = value.split(',').map(Number);
        if (!(low! >= 1 && high! > low!))
          throw new Error(`--slope: ${value} is not LOW,HIGH with LOW < HIGH`);
        o.slope = [low!, high!];
      }
    } else if (flag === '--systems') {
      o.targets = value.split(',') as Target[];
      for (const t of o.targets) if (!TARGETS.includes(t)) throw new Error(`--systems: unknown ${t}`);
    } else throw new Error(`unknown option ${flag}`);
  }
  return o;
}

interface Usage {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** One reading: the sockets open at the time and the process's memory after two full GCs. */
interface Reading {
  sockets: number;
  usage: Usage;
}

interface PerConnection {
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
}

const PROBE = join(__dirname, 'memory-probe.js');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The server's memory after two full GCs (SIGUSR2 to the preloaded probe); with `dump`, the probe
 * also writes its heap spaces and smaps, which go to `dumped`.
 */
async function probe(server: ServerProcess, file: string, dumped?: unknown[]): Promise<Usage> {
  rmSync(file, { force: true });
  process.kill(server.pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (!existsSync(file) && Date.now() < deadline) await sleep(20);
  await sleep(20);
  const read = JSON.parse(readFileSync(file, 'utf8')) as Usage & Record<string, unknown>;
  // /proc's RSS, the same reading as the memory scenario's (process.memoryUsage's is equal).
  const usage = {
    rss: rssKiB(server.pid) * 1024,
    heapUsed: read.heapUsed,
    external: read.external,
    arrayBuffers: read.arrayBuffers,
  };
  dumped?.push({ ...read, ...usage });
  return usage;
}

/** What each socket opened between two readings added, on average. */
function perConnection(from: Reading, to: Reading): PerConnection {
  const n = Math.max(1, to.sockets - from.sockets);
  const a = from.usage;
  const b = to.usage;
  return {
    rssBytes: Math.round((b.rss - a.rss) / n),
    heapUsedBytes: Math.round((b.heapUsed - a.heapUsed) / n),
    externalBytes: Math.round((b.external + b.arrayBuffers - a.external - a.arrayBuffers) / n),
  };
}

interface Measured {
  target: Target;
  /** Sockets open at the reading of `connections` (the first figure's divisor). */
  ok: number;
  before: Usage;
  after: Usage;
  /** From the baseline to `connections` sockets: the tool's first figure. */
  perConnection: PerConnection;
  /** Between the slope's two counts (absent with `--slope off`, or when a step did not open). */
  slope?: PerConnection & { low: number; high: number };
  readings: Reading[];
  load: number[];
}

const kib = (bytes: number): string => (bytes / 1024).toFixed(2);

async function measure(target: Target, o: Options, run: number): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-idle-memory-'));
  const file = join(dir, 'usage.json');
  const nodeOptions = `--expose-gc --require ${PROBE} ${o.serverFlags}`.trim();
  const env = {
    MEMORY_PROBE_FILE: file,
    ...(o.dump ? { MEMORY_PROBE_DUMP: '1' } : {}),
    ...(o.gc ? {} : { MEMORY_PROBE_GC: 'off' }),
    ...o.serverEnv,
  };
  const dumped: unknown[] | undefined = o.dump ? [] : undefined;
  let stop: () => Promise<void>;
  let server: ServerProcess;
  let url: (i: number) => string;
  let client = 'client.js';
  if (target === 'floor' || target === 'floor-topic') {
    server = await startNode(
      [join(__dirname, 'bare-uws.js'), target === 'floor' ? 'plain' : 'topic'],
      { HOST, ...env },
      { nodeOptions },
    );
    stop = () => server.stop();
    url = (i) => `ws://${HOST}:${server.port}/v3/idle-${i}`;
  } else {
    const system: SystemName = target === 'v3' ? 'switchboard-redis' : 'switchboard-pusher';
    const running = await startSystem(system, { nodes: 1, nodeOptions, env });
    server = running.nodes[0]!;
    stop = () => running.stop();
    url = (i) => running.wsUrl(0, 'v3', `idle-${i}`);
    if (target === 'pusher') client = 'pusher-client.js';
  }
  const fleet = new ClientFleet(2, 'raw', client);
  try {
    await fleet.connect(
      Array.from({ length: 50 }, (_, i) => url(100_000 + i)),
      { concurrency: 50 },
    );
    await fleet.closeAll();
    await sleep(o.settleMs);
    const readings: Reading[] = [{ sockets: 0, usage: await probe(server, file, dumped) }];
    // Every socket count read, in order: the slope's two and the first figure's. Socket i is on
    // channel i / 10, so each step opens its own channels, 10 sockets each, as the first does.
    const counts = [...new Set([o.connections, ...(o.slope ?? [])])].sort((a, b) => a - b);
    let open = 0;
    let firstError: string | undefined;
    for (const count of counts) {
      const opened = await fleet.connect(
        Array.from({ length: count - open }, (_, i) => url(Math.floor((open + i) / 10))),
        { concurrency: 400 },
      );
      firstError ??= opened.firstError;
      open += opened.ok;
      await sleep(o.settleMs);
      readings.push({ sockets: open, usage: await probe(server, file, dumped) });
    }
    const at = (count: number): Reading => readings[counts.indexOf(count) + 1]!;
    const base = readings[0]!;
    const main = at(o.connections);
    const result: Measured = {
      target,
      ok: main.sockets,
      before: base.usage,
      after: main.usage,
      perConnection: perConnection(base, main),
      ...(o.slope
        ? {
            slope: {
              ...perConnection(at(o.slope[0]), at(o.slope[1])),
              low: at(o.slope[0]).sockets,
              high: at(o.slope[1]).sockets,
            },
          }
        : {}),
      readings,
      load: loadavg().map((l) => Math.round(l * 100) / 100),
    };
    const p = result.perConnection;
    const s = result.slope;
    console.log(
      `${target.padEnd(11)} ${main.sockets}/${o.connections} idle: RSS ${kib(p.rssBytes)} KiB/conn` +
        ` (${(base.usage.rss / 2 ** 20).toFixed(1)} → ${(main.usage.rss / 2 ** 20).toFixed(1)} MiB),` +
        ` heap used ${p.heapUsedBytes} B/conn, external + array buffers ${p.externalBytes} B/conn` +
        (s
          ? `; slope ${s.low} → ${s.high}: RSS ${kib(s.rssBytes)} KiB/conn, heap used ${s.heapUsedBytes} B/conn`
          : '') +
        `; load ${result.load.join(' ')}` +
        (firstError ? ` (${firstError})` : ''),
    );
    if (o.dump && dumped) {
      mkdirSync(o.dump, { recursive: true });
      writeFileSync(
        join(o.dump, `${target}-run${run + 1}.json`),
        JSON.stringify({ target, sockets: readings.map((r) => r.sockets), readings: dumped }),
      );
    }
    return result;
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

runMain(
  'bench:idle-memory',
  async () => {
    const o = parse(process.argv.slice(2));
    console.log(
      `idle memory: ${o.connections} connections per server, ${o.runs} run(s), product ${product.dir}; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const startedAt = new Date().toISOString();
    const loadBefore = loadavg().map((l) => Math.round(l * 100) / 100);
    const all: Measured[] = [];
    for (let run = 0; run < o.runs; run++)
      for (const target of o.targets) all.push(await measure(target, o, run));
    const dir = join(ROOT, 'bench', 'results', 'tmp');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${startedAt.slice(0, 10)}-idle-memory.json`);
    const meta = {
      command: `npm run bench:idle-memory -- ${process.argv.slice(2).join(' ')}`.trim(),
      startedAt,
      finishedAt: new Date().toISOString(),
      productDir: product.dir,
      productCommit: gitCommit(product.dir),
      connections: o.connections,
      slope: o.slope ?? null,
      serverFlags: o.serverFlags,
      serverEnv: o.serverEnv,
      gc: o.gc,
      loadAverage: loadBefore,
      loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    };
    writeFileSync(file, `${JSON.stringify({ meta, cases: all }, null, 2)}\n`);
    console.log(`wrote ${file}`);
  },
  1,
);
