import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort, runMain, startRedis } from '@switchboard/harness';
import WebSocket from 'ws';
import {
  PING_FRAME,
  PONG_FRAME,
  batchBody,
  batchPath,
  signedPath,
  subscribeFrame,
} from '../lib/pusher-protocol';
import {
  CEILING,
  HOST,
  KEY,
  PUSHER_APP_ID,
  SECRET,
  cliPath,
  gatewayEnv,
  product,
  productNodeFlags,
  productPublishBatchScript,
  productPublishScript,
} from '../lib/procs';
import { PerfMap, selfCosts, splitCosts } from './callgrind-costs';
import type { CostSplit } from './callgrind-costs';

/**
 * A server's user-space instructions per REST publish, counted by valgrind's callgrind: figures
 * that do not move with a shared machine's load, where CPU time does by a fifth within minutes
 * (docs/performance.md, "What the gateway's JavaScript costs").
 *
 *   npm run bench:gateway-instructions [-- --systems gateway,floor,ceiling --warmup N
 *     --publishes N --channels N --subscribers N --batch N --ceiling-batch --profile N
 *     --product-dir DIR]
 *
 * One server under callgrind (a Switchboard gateway; the Redis-hop ceiling's server, `PUBLISH`;
 * or the floor, that server making Switchboard's publish script call) with a private Redis,
 * `subscribers` subscribers (default 1) in each of `channels` channels, REST publishes one at a
 * time over the channels, each awaited until every subscriber has it (as at a moderate rate,
 * every publish travels alone). The count
 * covers the whole server: the HTTP request, the Redis call and its reply, the pub/sub message
 * and the delivery. After `warmup` publishes (V8 tiers the path up meanwhile) SIGUSR2 makes the
 * server call `os.getPriority()`, on which callgrind dumps (`--dump-before`); then `publishes`
 * publishes, a dump, as long idle (timers), a dump, and `publishes` more. Each window's count,
 * less the idle rate over its duration, divided by its publishes; garbage collection and V8's
 * compilers are shown apart (a scavenge falls in one window or the next), and the work without
 * them is what to compare.
 *
 * `pusher` is the gateway again with Pusher subscribers (`/app/{key}?protocol=7`,
 * `pusher:subscribe`) and Pusher's signed HTTP API: `POST /apps/{id}/batch_events` with `batch`
 * events a request (each to the next channel; `--batch 1`: `POST /apps/{id}/events`), counted per
 * event, so its figure compares with the gateway's V3 REST publish (docs/performance.md, "What a
 * Pusher publish costs"). With `--ceiling-batch` the ceiling reads the same batches
 * (`{"batch":[{channel,message},…]}`, one `PUBLISH` each; the floor one call of the product's
 * batch script, as a gateway stores the publications of a turn), counted per publish likewise; with
 * `--channels 1 --subscribers 1000` both are the Pusher scenario's fan-out (docs/performance.md,
 * "Pusher fan-out against the ceiling").
 *
 * `--profile N` also lists each window's N dearest functions (self cost per publish, less nothing:
 * the idle rate is not taken off), JIT-compiled JavaScript named by node's `--perf-basic-prof`
 * map; the server then runs with that flag (it writes the map as it compiles, which the counts
 * include). The callgrind dumps stay in the directory printed, for `callgrind_annotate`.
 *
 * Needs valgrind (Debian's package). System calls are not counted: they are the same for every
 * system (docs/architecture.md).
 */
type SystemName = 'gateway' | 'floor' | 'ceiling' | 'pusher';

interface Options {
  systems: SystemName[];
  warmup: number;
  publishes: number;
  channels: number;
  /** Events per Pusher request (`pusher` only). */
  batch: number;
  /** Subscribers in each channel; a publish is awaited until every one of them has it. */
  subscribers: number;
  /**
   * The ceiling reads `batch` publishes a request too (`{"batch":[…]}`, as the Pusher scenario's
   * publisher sends it), so it compares with `pusher` request for request.
   */
  ceilingBatch: boolean;
  /** Functions listed per window (`--profile`); 0 lists none and runs node without a perf map. */
  profile: number;
}

const SYSTEMS: readonly SystemName[] = ['gateway', 'floor', 'ceiling', 'pusher'];
const DEFAULT_SYSTEMS: readonly SystemName[] = ['gateway', 'floor', 'ceiling'];

function parse(argv: string[]): Options {
  const o: Options = {
    systems: [...DEFAULT_SYSTEMS],
    warmup: 5000,
    publishes: 2000,
    channels: 200,
    batch: 10,
    subscribers: 1,
    ceilingBatch: false,
    profile: 0,
  };
  if (argv.includes('--ceiling-batch')) {
    o.ceilingBatch = true;
    argv = argv.filter((arg) => arg !== '--ceiling-batch');
  }
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1] ?? '';
    if (flag === '--product-dir') product.dir = value;
    else if (flag === '--systems') {
      const names = value.split(',');
      const unknown = names.find((name) => !SYSTEMS.includes(name as SystemName));
      if (unknown !== undefined) throw new Error(`--systems: unknown system "${unknown}"`);
      o.systems = names as SystemName[];
    } else {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer`);
      if (flag === '--warmup') o.warmup = n;
      else if (flag === '--publishes') o.publishes = n;
      else if (flag === '--channels') o.channels = n;
      else if (flag === '--batch') o.batch = Math.min(10, n);
      else if (flag === '--subscribers') o.subscribers = n;
      else if (flag === '--profile') o.profile = n;
      else throw new Error(`unknown option ${flag}`);
    }
  }
  return o;
}

/** Preloaded into the server: SIGUSR2 calls uv_os_getpriority, callgrind's dump trigger. */
const MARK = "const os = require('node:os');\nprocess.on('SIGUSR2', () => void os.getPriority());\n";

/** The server's command line and environment. */
function serverCommand(
  system: SystemName,
  redisUrl: string,
  port: number,
): { args: string[]; env: Record<string, string> } {
  const base = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', PORT: String(port), HOST };
  if (system === 'gateway' || system === 'pusher')
    return {
      args: [...productNodeFlags(), cliPath(), 'gateway'],
      env: { ...base, ...gatewayEnv('bench-1', redisUrl) },
    };
  const mode = system === 'floor' ? 'redis-script' : 'redis';
  return {
    args: [CEILING, mode],
    env: {
      ...base,
      REDIS_URL: redisUrl,
      ...(system === 'floor'
        ? { PUBLISH_SCRIPT: productPublishScript(), PUBLISH_BATCH_SCRIPT: productPublishBatchScript() }
        : {}),
    },
  };
}

/**
 * Resolves once the server serves: the gateway's health answers 200 (its Redis is reachable);
 * the ceiling's server listens only once its Redis connections are up.
 */
async function serving(system: SystemName, port: number, server: ChildProcess): Promise<void> {
  for (;;) {
    if (server.exitCode !== null) throw new Error(`the server exited (${server.exitCode})`);
    const up =
      system === 'gateway' || system === 'pusher'
        ? await fetch(`http://${HOST}:${port}/api/health`).then(
            (res) => res.ok,
            () => false,
          )
        : await new Promise<boolean>((resolve) => {
            const probe = connect(port, HOST, () => {
              probe.destroy();
              resolve(true);
            });
            probe.on('error', () => resolve(false));
          });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * Publications awaited by their sequence number (the `s` field of the benchmark's message), each
 * until `copies` sockets have it (every subscriber of its channel).
 */
class Deliveries {
  private readonly waiting = new Map<string, { left: number; resolve: () => void }>();

  constructor(private readonly copies: number) {}

  watch(socket: WebSocket): void {
    socket.on('message', (data: Buffer) => {
      // A Pusher frame carries the message as its `data` string: its quotes are escaped.
      const match = /\\?"s\\?":\\?"(\d+)/.exec(data.toString());
      const wait = match ? this.waiting.get(match[1] ?? '') : undefined;
      if (wait && --wait.left === 0) {
        this.waiting.delete(match![1]!);
        wait.resolve();
      }
    });
  }

  expect(seq: string): Promise<void> {
    return new Promise((resolve) => this.waiting.set(seq, { left: this.copies, resolve }));
  }
}

const PING_PREFIX = PING_FRAME.slice(0, 24);

/** Subscribes a Pusher socket to `channel`, resolving on `pusher_internal:subscription_succeeded`. */
function pusherSubscribe(socket: WebSocket, channel: string): Promise<void> {
  // The gateway pings a quiet Pusher socket (`pusher:ping`) and closes it unanswered: under
  // callgrind the run is slow enough for that to happen.
  socket.on('message', (data: Buffer) => {
    if (data.toString().startsWith(PING_PREFIX)) socket.send(PONG_FRAME);
  });
  return new Promise((resolve, reject) => {
    const onMessage = (data: Buffer): void => {
      const frame = JSON.parse(data.toString()) as { event?: string };
      if (frame.event === 'pusher:connection_established') socket.send(subscribeFrame(channel));
      else if (frame.event === 'pusher_internal:subscription_succeeded') {
        socket.off('message', onMessage);
        resolve();
      } else if (frame.event === 'pusher:error') reject(new Error(`subscribe refused: ${data.toString()}`));
    };
    socket.on('message', onMessage);
  });
}

/** The dump callgrind wrote on its `n`th trigger (1-based). */
const dumpFile = (dir: string, n: number): string => {
  const name = readdirSync(dir).find((file) => file.endsWith(`.${n}`));
  if (!name) throw new Error(`no callgrind dump ${n} in ${dir}`);
  return join(dir, name);
};

interface Window {
  ms: number;
  costs: CostSplit;
  /** The dump's file (`callgrind_annotate` reads it). */
  file: string;
}

async function measure(system: SystemName, o: Options): Promise<Window[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-callgrind-'));
  const mark = join(dir, 'mark.cjs');
  writeFileSync(mark, MARK);
  const redis = await startRedis();
  const port = await freePort();
  const { args, env } = serverCommand(system, redis.url, port);
  const server = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--dump-instr=no',
      '--dump-before=uv_os_getpriority',
      `--callgrind-out-file=${join(dir, 'out')}`,
      process.execPath,
      ...(o.profile > 0 ? ['--perf-basic-prof'] : []),
      '-r',
      mark,
      ...args,
    ],
    { env, stdio: 'ignore' },
  );
  const sockets: WebSocket[] = [];
  try {
    await serving(system, port, server);
    const deliveries = new Deliveries(o.subscribers);
    for (let j = 0; j < o.channels * o.subscribers; j++) {
      const i = j % o.channels;
      const socket = new WebSocket(
        system === 'pusher'
          ? `ws://${HOST}:${port}/app/${KEY}?protocol=7`
          : `ws://${HOST}:${port}/v3/ch-${i}?api_key=${KEY}`,
      );
      // Listening from the start: the greeting can arrive with the upgrade's answer, before `open`'s awaiter runs.
      const subscribed = system === 'pusher' ? pusherSubscribe(socket, `ch-${i}`) : undefined;
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      await subscribed;
      deliveries.watch(socket);
      sockets.push(socket);
    }
    let seq = 0;
    const pad = 'x'.repeat(52);
    const eventsPath = `/apps/${PUSHER_APP_ID}/events`;
    /** `batch` Pusher events in one request, each to the next channel, awaited until delivered. */
    const publishPusher = async (): Promise<void> => {
      const events: { channel: string; data: string }[] = [];
      const delivered: Promise<void>[] = [];
      for (let i = 0; i < o.batch; i++) {
        seq += 1;
        const s = String(seq).padStart(10, '0');
        delivered.push(deliveries.expect(s));
        const data = `{"t":"${String(seq).padStart(16, '0')}","s":"${s}","p":"${pad}"}`;
        events.push({ channel: `ch-${seq % o.channels}`, data });
      }
      const only = o.batch === 1 ? events[0] : undefined;
      const body = only ? JSON.stringify({ name: 'bench', ...only }) : batchBody(events);
      const path = only ? eventsPath : batchPath(eventsPath);
      const res = await fetch(`http://${HOST}:${port}${signedPath('POST', path, KEY, SECRET, body)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      if (!res.ok) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      await Promise.all(delivered);
    };
    /**
     * `batch` publishes in one request to the ceiling (`--ceiling-batch`), each its own `PUBLISH`
     * (the floor: all in one batch-script call).
     */
    const publishCeilingBatch = async (): Promise<void> => {
      const batch: { channel: string; message: string }[] = [];
      const delivered: Promise<void>[] = [];
      for (let i = 0; i < o.batch; i++) {
        seq += 1;
        const s = String(seq).padStart(10, '0');
        delivered.push(deliveries.expect(s));
        const message = `{"t":"${String(seq).padStart(16, '0')}","s":"${s}","p":"${pad}"}`;
        batch.push({ channel: `ch-${seq % o.channels}`, message });
      }
      const res = await fetch(`http://${HOST}:${port}/api/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: KEY, secret: SECRET, batch }),
      });
      if (!res.ok) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      await Promise.all(delivered);
    };
    const publishRest = async (): Promise<void> => {
      seq += 1;
      const s = String(seq).padStart(10, '0');
      const delivered = deliveries.expect(s);
      const message = `{"t":"${String(seq).padStart(16, '0')}","s":"${s}","p":"${pad}"}`;
      const res = await fetch(`http://${HOST}:${port}/api/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: KEY, secret: SECRET, channel: `ch-${seq % o.channels}`, message }),
      });
      if (!res.ok) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      await delivered;
    };
    /** Requests per window: Pusher requests (and the ceiling's, batched) carry `batch` events each. */
    const batched = batches(system, o);
    const requests = batched ? requestsOf(o) : o.publishes;
    const publish = system === 'pusher' ? publishPusher : batched ? publishCeilingBatch : publishRest;
    let dumps = 0;
    const dump = async (): Promise<void> => {
      dumps += 1;
      server.kill('SIGUSR2');
      while (!readdirSync(dir).some((file) => file.endsWith(`.${dumps}`)))
        await new Promise((resolve) => setTimeout(resolve, 200));
      // The dump is written when it is listed complete: its totals line comes last.
      while (!/^totals: /m.test(readFileSync(dumpFile(dir, dumps), 'utf8')))
        await new Promise((resolve) => setTimeout(resolve, 200));
    };
    const warmups = batched ? Math.max(1, Math.round(o.warmup / o.batch)) : o.warmup;
    for (let i = 0; i < warmups; i++) await publish();
    await dump();
    const windows: Window[] = [];
    for (const phase of ['publishes', 'idle', 'publishes'] as const) {
      const started = performance.now();
      if (phase === 'idle') await new Promise((resolve) => setTimeout(resolve, windows[0]!.ms));
      else for (let i = 0; i < requests; i++) await publish();
      const ms = performance.now() - started;
      await dump();
      windows.push({ ms, costs: splitCosts(dumpFile(dir, dumps)), file: dumpFile(dir, dumps) });
    }
    if (o.profile > 0) profile(windows, server.pid, o);
    return windows;
  } finally {
    for (const socket of sockets) socket.terminate();
    server.kill('SIGTERM');
    if (server.exitCode === null) await new Promise((resolve) => server.once('exit', resolve));
    await redis.stop();
  }
}

/** Each publish window's dearest functions, per publish (`--profile`). */
function profile(windows: Window[], pid: number | undefined, o: Options): void {
  const map = join(tmpdir(), `perf-${pid}.map`);
  let names: PerfMap | undefined;
  try {
    names = new PerfMap(map);
  } catch {
    console.log(`(no perf map at ${map}: JIT-compiled code is named by its address)`);
  }
  const publishes = o.publishes;
  for (const window of [windows[0]!, windows[2]!]) {
    console.log(`  ${window.file}, self instructions per publish:`);
    for (const { name, cost } of selfCosts(window.file, names).slice(0, o.profile))
      console.log(`  ${String(Math.round(cost / publishes)).padStart(9)}  ${name}`);
  }
}

/** Whether `system`'s requests carry `batch` publishes: Pusher's, and the ceiling's when asked. */
const batches = (system: SystemName, o: Options): boolean =>
  system === 'pusher' || ((system === 'ceiling' || system === 'floor') && o.ceilingBatch);

/** Pusher requests in a window: `publishes` events, `batch` a request. */
const requestsOf = (o: Options): number => Math.max(1, Math.round(o.publishes / o.batch));

const k = (n: number): string => `${(n / 1000).toFixed(1)}k`;

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  console.log(
    `User-space instructions per REST publish (callgrind; ${o.channels} channels, ${o.subscribers} subscriber(s) each, ` +
      `${o.publishes} publishes a window after ${o.warmup}; work = total − GC − compiling; ` +
      `pusher${o.ceilingBatch ? ', ceiling and floor' : ''}: ${o.batch} events a request, per event):`,
  );
  for (const system of o.systems) {
    const [first, idle, second] = await measure(system, o);
    const perMs = (field: keyof CostSplit): number => idle!.costs[field] / idle!.ms;
    const per = (w: Window, field: keyof CostSplit): number =>
      (w.costs[field] - perMs(field) * w.ms) / (batches(system, o) ? requestsOf(o) * o.batch : o.publishes);
    const line = (w: Window): string => {
      const work = per(w, 'total') - per(w, 'gc') - per(w, 'compile');
      return `work ${k(work)} (total ${k(per(w, 'total'))}, GC ${k(per(w, 'gc'))}, compiling ${k(per(w, 'compile'))})`;
    };
    console.log(`- ${system}: ${line(first!)}; again: ${line(second!)} (dumps: ${dirname(first!.file)})`);
  }
}

runMain('bench:gateway-instructions', main, 1);
