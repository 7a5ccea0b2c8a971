import Redis from 'ioredis';
import { connectFleet } from '../../lib/native-fleet';
import type { ConnectFleet } from '../../lib/native-fleet';
import { cpuOf } from '../../lib/cpu';
import type { CpuUse } from '../../lib/cpu';
import { KEY, REDIS_PREFIX, startSystem } from '../../lib/procs';
import type { System, SystemName } from '../../lib/procs';

/**
 * What a plain connection costs the servers (issue 16): N plain V3 connections opened and then
 * closed on 2 nodes + Redis, Switchboard right after the Redis-hop ceiling in the same run, and
 * the CPU (utime + stime of the server processes and redis-server) each phase used, per 1,000
 * connections. A reconnect storm after a rolling restart is this, repeated for every client.
 */

/** Issue 16's target: Switchboard's server + Redis CPU per connection (open + close) at most this multiple of the ceiling's. */
export const CONNECT_COST_TARGET = 2;

/** Connections in a channel: each channel spans both nodes, so both subscribe to it in Redis. */
export const CONNECT_CHANNEL_SIZE = 10;

/** Between the storms, the first one's work is over once the processes' CPU stops moving. */
const SETTLE_WINDOW_MS = 100;
const SETTLE_MAX_MS = 5000;

export interface PhaseCost {
  /** Seconds from the phase's start until its work was over (as Redis shows: channels, counts). */
  seconds: number;
  /** CPU seconds: both server processes, redis-server, the client processes. */
  cpu: { servers: number; redis: number; clients: number };
  /** Server + Redis CPU per 1,000 connections, ms. */
  msPer1000: number;
}

export interface ConnectCostSide {
  system: SystemName;
  connections: number;
  ok: number;
  failed: number;
  /** From the first connect to the last 101, seconds. */
  openSeconds: number;
  connect: PhaseCost;
  close: PhaseCost;
  /** Connect + close, server + Redis CPU per 1,000 connections, ms. */
  totalMsPer1000: number;
  /**
   * The same storm right after the servers started, before the measured one: it also pays V8
   * compiling the connection path (once per process; per connection, less the larger the storm).
   */
  first?: { connect: PhaseCost; close: PhaseCost; totalMsPer1000: number };
  /** Connections the client saw open that Switchboard's count in Redis never included. */
  uncounted?: number;
  firstError?: string;
}

/** One run: the ceiling, then Switchboard, back to back. */
export interface ConnectCostRun {
  ceiling?: ConnectCostSide;
  switchboard?: ConnectCostSide;
  /** Switchboard ÷ ceiling, server + Redis CPU per connection; `first`: of the first storms. */
  ratio?: { connect: number; close: number; total: number; first?: number };
  error?: string;
}

export interface ConnectCostOptions {
  connections: number;
  workers: number;
  log: (line: string) => void;
}

const serverSide = (c: CpuUse): number => c.servers + c.redis;

/** Waits until the servers' and Redis' CPU stopped moving (two windows in a row adding at most a clock tick each). */
async function settle(system: System, fleet: ConnectFleet): Promise<void> {
  const deadline = Date.now() + SETTLE_MAX_MS;
  let last = serverSide(cpuOf(system, fleet));
  let quiet = 0;
  while (quiet < 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, SETTLE_WINDOW_MS));
    const now = serverSide(cpuOf(system, fleet));
    quiet = now - last <= 0.0101 ? quiet + 1 : 0;
    last = now;
  }
}

/** Channels Redis has subscribers on (`INFO stats`), both systems' servers included. */
async function pubsubChannels(redis: Redis): Promise<number> {
  const match = /pubsub_channels:(\d+)/.exec(await redis.info('stats'));
  return match ? Number(match[1]) : 0;
}

function phase(before: CpuUse, after: CpuUse, seconds: number, ok: number): PhaseCost {
  const cpu = {
    servers: after.servers - before.servers,
    redis: after.redis - before.redis,
    clients: after.clients - before.clients,
  };
  return { seconds, cpu, msPer1000: ((cpu.servers + cpu.redis) * 1e6) / Math.max(ok, 1) };
}

export async function connectCostSide(name: SystemName, o: ConnectCostOptions): Promise<ConnectCostSide> {
  const system = await startSystem(name, { nodes: 2 });
  const fleet = connectFleet(o.workers, o.log);
  const redis = new Redis(system.redis!.url);
  try {
    // The channels the servers listen to with no connection (Switchboard's control channel).
    const baseline = await pubsubChannels(redis);
    const channels = Math.ceil(o.connections / CONNECT_CHANNEL_SIZE);
    const counted = name.startsWith('switchboard') ? countedConnections(redis) : undefined;
    /** Opens `o.connections`, then closes them, each phase timed until Redis shows its work done. */
    const storm = async (prefix: string) => {
      const urls = Array.from({ length: o.connections }, (_, i) =>
        system.wsUrl(i, 'v3', `${prefix}-${Math.floor(i / CONNECT_CHANNEL_SIZE)}`),
      );
      const start = performance.now();
      const before = cpuOf(system, fleet);
      const opened = await fleet.connect(urls, { concurrency: 400 });
      // Every server subscribed every channel; Switchboard wrote its count changes (after the 101s).
      const uncounted = await until(
        redis,
        baseline + channels,
        counted && { read: counted, want: opened.ok },
        'connect',
      );
      if (uncounted)
        o.log(
          `  ${name}: ${uncounted} of ${opened.ok} opened connections not counted; gateway log: ${system.nodes
            .flatMap((n) => n.lines.slice(-3))
            .join(' | ')
            .slice(0, 600)}`,
        );
      const connected = cpuOf(system, fleet);
      const connectSeconds = (performance.now() - start) / 1000;
      const closeStart = performance.now();
      await fleet.closeAll();
      await until(redis, baseline, counted && { read: counted, want: 0 }, 'close');
      const closed = cpuOf(system, fleet);
      const connect = phase(before, connected, connectSeconds, opened.ok);
      const close = phase(connected, closed, (performance.now() - closeStart) / 1000, opened.ok);
      return { opened, uncounted, connect, close, totalMsPer1000: connect.msPer1000 + close.msPer1000 };
    };
    const first = await storm('first');
    if (first.opened.failed)
      throw new Error(`first storm: ${first.opened.failed} failed (${first.opened.firstError ?? ''})`);
    await settle(system, fleet);
    const { opened, uncounted, connect, close, totalMsPer1000 } = await storm('cc');
    return {
      system: name,
      connections: o.connections,
      ok: opened.ok,
      failed: opened.failed,
      openSeconds: opened.openSeconds,
      connect,
      close,
      totalMsPer1000,
      ...(uncounted ? { uncounted } : {}),
      first: { connect: first.connect, close: first.close, totalMsPer1000: first.totalMsPer1000 },
      ...(opened.firstError ? { firstError: opened.firstError } : {}),
    };
  } finally {
    redis.disconnect();
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await system.stop();
  }
}

/** Switchboard's count of the bench key's connections in Redis (docs/redis-keys.md). */
const countedConnections = (redis: Redis) => async (): Promise<number> =>
  Number((await redis.get(`${REDIS_PREFIX}:counts:{${KEY}}:total`)) ?? 0);

/** How long a count that differs from the connections opened must hold still to be final. */
const COUNT_STILL_MS = 500;

/**
 * Polls Redis until the servers are subscribed to exactly `channels` channels and, when `counted`
 * is given, the connection count is `want`: the end of a phase's work, recognized without
 * waiting on a timer (which would add the servers' idle CPU to the phase). A count that settles
 * elsewhere (a connection the client saw open but the gateway refused after its 101, such as an
 * engine timeout under load) ends the phase once it held still for `COUNT_STILL_MS`; the
 * difference is returned, and reported.
 */
async function until(
  redis: Redis,
  channels: number,
  counted: { read: () => Promise<number>; want: number } | undefined,
  what: string,
): Promise<number> {
  const deadline = Date.now() + 30_000;
  let last: { count: number | undefined; since: number } = { count: undefined, since: Date.now() };
  for (;;) {
    const [n, count] = await Promise.all([pubsubChannels(redis), counted?.read()]);
    if (n === channels && count === counted?.want) return 0;
    if (count !== last.count) last = { count, since: Date.now() };
    else if (n === channels && Date.now() - last.since >= COUNT_STILL_MS)
      return (counted?.want ?? 0) - (count ?? 0);
    if (Date.now() > deadline)
      throw new Error(
        `${what}: after 30 s ${n} channels subscribed (want ${channels}), ${count ?? '–'} connections counted (want ${counted?.want ?? '–'})`,
      );
    await new Promise((r) => setTimeout(r, 10));
  }
}

const describe = (s: ConnectCostSide): string =>
  `${s.ok}/${s.connections} open in ${s.openSeconds.toFixed(2)} s (phases ${s.connect.seconds.toFixed(2)} + ${s.close.seconds.toFixed(2)} s); ms CPU per 1,000 (servers + Redis): connect ${s.connect.msPer1000.toFixed(0)} (${s.connect.cpu.servers.toFixed(2)} + ${s.connect.cpu.redis.toFixed(2)} s), close ${s.close.msPer1000.toFixed(0)} (${s.close.cpu.servers.toFixed(2)} + ${s.close.cpu.redis.toFixed(2)} s), total ${s.totalMsPer1000.toFixed(0)}; first storm ${s.first?.totalMsPer1000.toFixed(0) ?? '–'}`;

export async function connectCostRun(o: ConnectCostOptions): Promise<ConnectCostRun> {
  const run: ConnectCostRun = {};
  try {
    run.ceiling = await connectCostSide('ceiling-redis', o);
    o.log(`  ceiling:     ${describe(run.ceiling)}`);
    run.switchboard = await connectCostSide('switchboard-redis', o);
    o.log(`  switchboard: ${describe(run.switchboard)}`);
    const c = run.ceiling;
    const s = run.switchboard;
    if (s.failed || c.failed) throw new Error(`failed connections: ${s.firstError ?? c.firstError ?? ''}`);
    run.ratio = {
      connect: s.connect.msPer1000 / c.connect.msPer1000,
      close: s.close.msPer1000 / c.close.msPer1000,
      total: s.totalMsPer1000 / c.totalMsPer1000,
      ...(s.first && c.first ? { first: s.first.totalMsPer1000 / c.first.totalMsPer1000 } : {}),
    };
    o.log(
      `  ratio: connect ${run.ratio.connect.toFixed(2)}×, close ${run.ratio.close.toFixed(2)}×, total ${run.ratio.total.toFixed(2)}×; first storm after the start ${run.ratio.first?.toFixed(2) ?? '–'}×`,
    );
  } catch (error) {
    run.error = String(error);
    o.log(`  ERROR ${run.error}`);
  }
  return run;
}

/** The run with the median total ratio (of those complete). */
export function medianConnectCostRun(runs: ConnectCostRun[]): ConnectCostRun | undefined {
  const rated = runs.filter((r) => r.ratio).sort((a, b) => a.ratio!.total - b.ratio!.total);
  return rated[Math.floor((rated.length - 1) / 2)];
}
