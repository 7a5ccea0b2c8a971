import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runMain } from '@switchboard/harness';
import { ClientFleet } from '../lib/fleet';
import { gitCommit } from '../lib/machine';
import { HOST, ROOT, product, rssKiB, startNode, startSystem } from '../lib/procs';
import type { ServerProcess, SystemName } from '../lib/procs';

/**
 * Idle memory per connection, and its floor (docs/benchmarks.md, "Idle memory: the floor"):
 *
 *   npm run bench:idle-memory [-- --connections N --systems floor,floor-topic,v3,pusher --runs N
 *     --product-dir DIR]
 *
 * One server process, `connections` idle sockets from 2 client processes (10 a channel), and what
 * they cost it: RSS and V8's heap (used, and external + array buffers), each read after two full
 * GCs (`--expose-gc`, bench/src/tools/memory-probe.ts), before the sockets (after a warm-up of 50
 * opened and closed) and after them, divided by the sockets that opened.
 *
 * - `floor`: a bare uWebSockets.js server (bench/src/tools/bare-uws.ts), an empty user data object;
 * - `floor-topic`: the same, each socket subscribed to its channel's uWS topic, as every idle
 *   subscriber of the gateway is;
 * - `v3`: a Switchboard gateway on Redis, PieSocket V3 sockets (`/v3/{channel}`);
 * - `pusher`: a Switchboard gateway on Redis, Pusher sockets subscribed by `pusher:subscribe`.
 *
 * Writes bench/results/tmp/<date>-idle-memory.json (not committed; copy a run worth keeping into
 * bench/results/). A measuring tool, not a test: figures move with the machine (glibc's
 * allocator, V8's version, the young generation's size when read).
 */
type Target = 'floor' | 'floor-topic' | 'v3' | 'pusher';
const TARGETS: readonly Target[] = ['floor', 'floor-topic', 'v3', 'pusher'];

interface Options {
  connections: number;
  targets: Target[];
  runs: number;
  settleMs: number;
}

function parse(argv: string[]): Options {
  const o: Options = { connections: 10_000, targets: [...TARGETS], runs: 1, settleMs: 1500 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1] ?? '';
    if (flag === '--connections') o.connections = Math.max(1, Number(value));
    else if (flag === '--runs') o.runs = Math.max(1, Number(value));
    else if (flag === '--settle') o.settleMs = Math.max(0, Number(value));
    else if (flag === '--product-dir') product.dir = resolve(value);
    else if (flag === '--systems') {
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

const PROBE = join(__dirname, 'memory-probe.js');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server's memory after two full GCs (SIGUSR2 to the preloaded probe). */
async function probe(server: ServerProcess, file: string): Promise<Usage> {
  rmSync(file, { force: true });
  process.kill(server.pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (!existsSync(file) && Date.now() < deadline) await sleep(20);
  await sleep(20);
  const usage = JSON.parse(readFileSync(file, 'utf8')) as Usage;
  // /proc's RSS, the same reading as the memory scenario's (process.memoryUsage's is equal).
  return { ...usage, rss: rssKiB(server.pid) * 1024 };
}

interface Measured {
  target: Target;
  ok: number;
  before: Usage;
  after: Usage;
  perConnection: { rssBytes: number; heapUsedBytes: number; externalBytes: number };
  load: number[];
}

async function measure(target: Target, o: Options): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-idle-memory-'));
  const file = join(dir, 'usage.json');
  const nodeOptions = `--expose-gc --require ${PROBE}`;
  let stop: () => Promise<void>;
  let server: ServerProcess;
  let url: (i: number) => string;
  let client = 'client.js';
  if (target === 'floor' || target === 'floor-topic') {
    server = await startNode(
      [join(__dirname, 'bare-uws.js'), target === 'floor' ? 'plain' : 'topic'],
      { HOST, MEMORY_PROBE_FILE: file },
      { nodeOptions },
    );
    stop = () => server.stop();
    url = (i) => `ws://${HOST}:${server.port}/v3/idle-${i}`;
  } else {
    const system: SystemName = target === 'v3' ? 'switchboard-redis' : 'switchboard-pusher';
    const running = await startSystem(system, { nodes: 1, nodeOptions, env: { MEMORY_PROBE_FILE: file } });
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
    const before = await probe(server, file);
    const channels = Math.max(1, Math.floor(o.connections / 10));
    const opened = await fleet.connect(
      Array.from({ length: o.connections }, (_, i) => url(i % channels)),
      { concurrency: 400 },
    );
    await sleep(o.settleMs);
    const after = await probe(server, file);
    const n = Math.max(1, opened.ok);
    const result: Measured = {
      target,
      ok: opened.ok,
      before,
      after,
      perConnection: {
        rssBytes: Math.round((after.rss - before.rss) / n),
        heapUsedBytes: Math.round((after.heapUsed - before.heapUsed) / n),
        externalBytes: Math.round(
          (after.external + after.arrayBuffers - before.external - before.arrayBuffers) / n,
        ),
      },
      load: loadavg().map((l) => Math.round(l * 100) / 100),
    };
    const p = result.perConnection;
    console.log(
      `${target.padEnd(11)} ${opened.ok}/${o.connections} idle: RSS ${(p.rssBytes / 1024).toFixed(2)} KiB/conn` +
        ` (${(before.rss / 2 ** 20).toFixed(1)} → ${(after.rss / 2 ** 20).toFixed(1)} MiB),` +
        ` heap used ${p.heapUsedBytes} B/conn, external + array buffers ${p.externalBytes} B/conn;` +
        ` load ${result.load.join(' ')}` +
        (opened.firstError ? ` (${opened.firstError})` : ''),
    );
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
    for (let run = 0; run < o.runs; run++) for (const target of o.targets) all.push(await measure(target, o));
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
      loadAverage: loadBefore,
      loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    };
    writeFileSync(file, `${JSON.stringify({ meta, cases: all }, null, 2)}\n`);
    console.log(`wrote ${file}`);
  },
  1,
);
