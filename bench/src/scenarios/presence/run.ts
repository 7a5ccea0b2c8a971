import Redis from 'ioredis';
import { ClientFleet } from '../../lib/fleet';
import { connectFleet } from '../../lib/native-fleet';
import type { ConnectFleet } from '../../lib/native-fleet';
import { KeepAliveConnection, postRequest } from '../../lib/http';
import { fillPresence } from '../../lib/product';
import { cpus } from 'node:os';
import { cpuOf, cpuSince } from '../../lib/cpu';
import type { CpuUse } from '../../lib/cpu';
import { HOST, KEY, REDIS_PREFIX, SECRET, pinToCpus, startSystem } from '../../lib/procs';
import type { System } from '../../lib/procs';
import { WebhookReceiver } from '@switchboard/harness';

export interface ConnectRate {
  connections: number;
  ok: number;
  failed: number;
  seconds: number;
  perSecond: number;
  perSecondPerNode: number;
  /** CPU seconds each group of processes used from the first connect to the last join. */
  cpu: CpuUse;
  /**
   * Server CPU (one gateway or ceiling process) per connection, µs. A node runs on one thread,
   * so 1e6 / this is what one node sustains with a core of its own: the figure the load
   * generator cannot show when it shares the machine's 2 cores with the servers and Redis.
   */
  serverCpuUsPerConnection: number;
  perSecondPerNodeCore: number;
  /** Joins (or opens) of the warm-up before the measurement, not counted in the rate. */
  warmUp?: number;
  firstError?: string;
}

/** How the events of a webhook-on run reached the receiver, once every socket was closed. */
export interface WebhookDelivery {
  /** Joins that completed in the run, warm-up included: each is one member_added and one member_removed. */
  joins: number;
  requests: number;
  events: number;
  byName: Record<string, number>;
  /** Seconds from closing every socket until the key's stream was empty and every event received. */
  drainSeconds: number;
  /** The stream's length at the end: 0 when the queue drained. */
  depth: number;
  /** member_added = member_removed = joins, channel_occupied = channel_vacated, nothing malformed. */
  complete: boolean;
}

/** The presence joins again with a webhook on the bench key (every event), to a local receiver. */
export interface WebhookJoins {
  joins?: ConnectRate;
  joinsDelivery?: WebhookDelivery;
  ownCore?: ConnectRate;
  ownCoreDelivery?: WebhookDelivery;
}

export interface PresenceResult {
  nodes: number;
  channelSize: number;
  /** The client of the connection-rate measurements: native `connect-load` or the Node fleet. */
  connectClient?: 'native' | 'node';
  joins?: ConnectRate;
  /**
   * One node pinned to a core of its own (Redis, the clients and the harness on the other
   * cores): the joins one node sustains when the load generator does not take its CPU.
   */
  ownCore?: ConnectRate;
  /** The same pinning with the Redis-hop ceiling and plain connections: what the clients can drive. */
  ownCoreCeiling?: ConnectRate;
  leaves?: {
    connections: number;
    seconds: number;
    perSecond: number;
    perSecondPerNode: number;
    complete: boolean;
  };
  /** The same clients, no presence, against the Redis-hop ceiling: plain connections per second. */
  ceilingConnects?: ConnectRate;
  members?: { members: number; requests: number; count: number; medianMs: number; p95Ms: number };
  /** The same joins (2 nodes shared, 1 node on its own core) with a webhook on the key. */
  webhooks?: WebhookJoins;
  ceilingMembers?: { members: number; requests: number; medianMs: number; p95Ms: number };
  error?: string;
}

export interface PresenceOptions {
  connectionsPerNode: number;
  channelSize: number;
  members: number;
  requests: number;
  workers: number;
  log: (line: string) => void;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};
export const p95 = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)] ?? 0;
};

export async function timeRequests(
  port: number,
  path: string,
  body: object,
  requests: number,
): Promise<{ times: number[]; last: string }> {
  const connection = new KeepAliveConnection(HOST, port);
  await connection.open();
  const times: number[] = [];
  let last = '';
  const request = postRequest(HOST, port, path, JSON.stringify(body));
  try {
    for (let i = 0; i < requests + 10; i++) {
      const start = performance.now();
      const result = await connection.request(request);
      const elapsed = performance.now() - start;
      if (result.status !== 200)
        throw new Error(`${path} answered ${result.status}: ${result.body.slice(0, 200)}`);
      if (i >= 10) times.push(elapsed); // the first 10 warm up
      last = result.body;
    }
  } finally {
    connection.close();
  }
  return { times, last };
}

function rate(
  total: number,
  ok: number,
  failed: number,
  seconds: number,
  nodes: number,
  cpu: CpuUse,
  firstError?: string,
): ConnectRate {
  const serverCpuUsPerConnection = (cpu.servers * 1e6) / Math.max(ok, 1);
  return {
    connections: total,
    ok,
    failed,
    seconds,
    perSecond: ok / Math.max(seconds, 1e-6),
    perSecondPerNode: ok / Math.max(seconds, 1e-6) / nodes,
    cpu,
    serverCpuUsPerConnection,
    perSecondPerNodeCore: 1e6 / Math.max(serverCpuUsPerConnection, 1e-6),
    ...(firstError ? { firstError } : {}),
  };
}

const describe = (r: ConnectRate): string =>
  `${Math.round(r.perSecondPerNode)}/s per node; CPU s: servers ${r.cpu.servers.toFixed(2)}, Redis ${r.cpu.redis.toFixed(2)}, clients ${r.cpu.clients.toFixed(2)}; ${Math.round(r.serverCpuUsPerConnection)} µs server CPU each = ${Math.round(r.perSecondPerNodeCore)}/s per node-core`;

/**
 * Connections (joins) before a measurement, not counted: enough for V8 to optimize the join path
 * (a cold gateway measured up to 30% more CPU per join over the next 10,000 with 100).
 */
const WARM_UP = 1000;

/** Warms up (JIT, scripts loaded), then opens `urls` with presence and times them to their member lists. */
async function measureJoins(
  system: System,
  fleet: ConnectFleet,
  urls: string[],
  nodes: number,
  /** The frame that completes a join, or null to time plain opens. */
  joinMarker: string | null = 'system::member_list',
): Promise<ConnectRate> {
  const marker = joinMarker ? { joinMarker } : {};
  const warm = await fleet.connect(
    urls.slice(0, WARM_UP).map((u) => u.replace('pres-', 'warm-')),
    { concurrency: 200, ...marker },
  );
  await fleet.closeAll();
  await new Promise((r) => setTimeout(r, 500));
  const cpuBefore = cpuOf(system, fleet);
  const done = await fleet.connect(urls, { concurrency: 400, ...marker });
  const ok = joinMarker ? done.joined : done.ok;
  return {
    ...rate(
      urls.length,
      ok,
      urls.length - ok,
      joinMarker ? done.joinSeconds : done.openSeconds,
      nodes,
      cpuSince(cpuBefore, cpuOf(system, fleet)),
      done.firstError,
    ),
    warmUp: joinMarker ? warm.joined : warm.ok,
  };
}

/** Every event a key's webhook can send: the webhook-on runs produce them all. */
const ALL_WEBHOOK_EVENTS = [
  'channel_occupied',
  'channel_vacated',
  'member_added',
  'member_removed',
  'client_event',
];

/** Gateway environment giving the bench key a webhook to `sink` (seeded like the key itself). */
const webhookEnv = (sink: WebhookReceiver): Record<string, string> => ({
  SWITCHBOARD_KEYS: JSON.stringify([
    { key: KEY, secret: SECRET, webhook: { url: sink.url, events: ALL_WEBHOOK_EVENTS } },
  ]),
});

/**
 * Closes every socket of a webhook-on run, then waits (up to 60 s) until the key's event stream
 * is empty and the receiver has one member_added and one member_removed per join and as many
 * channel_vacated as channel_occupied: every event of the run delivered, the queue drained.
 */
async function drainWebhooks(
  system: System,
  fleet: ConnectFleet,
  sink: WebhookReceiver,
  joins: number,
): Promise<WebhookDelivery> {
  const redis = new Redis(system.redis!.url);
  // The key's webhook stream (docs/redis-keys.md).
  const stream = `${REDIS_PREFIX}:webhook:{${KEY}}:events`;
  const counts = sink.counts;
  const n = (name: string): number => counts.byName[name] ?? 0;
  const balanced = (): boolean =>
    n('member_added') === joins &&
    n('member_removed') === joins &&
    n('channel_occupied') > 0 &&
    n('channel_occupied') === n('channel_vacated') &&
    counts.malformed === 0;
  const start = performance.now();
  try {
    await fleet.closeAll();
    let depth = await redis.xlen(stream);
    const deadline = Date.now() + 60_000;
    while (!(balanced() && depth === 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      depth = await redis.xlen(stream);
    }
    return {
      joins,
      requests: counts.requests,
      events: counts.events,
      byName: { ...counts.byName },
      drainSeconds: (performance.now() - start) / 1000,
      depth,
      complete: balanced() && depth === 0,
    };
  } finally {
    redis.disconnect();
  }
}

const describeDelivery = (d: WebhookDelivery): string =>
  `webhooks: ${d.events} events in ${d.requests} requests (${Object.entries(d.byName)
    .map(([name, count]) => `${name} ${count}`)
    .join(
      ', ',
    )}), queue ${d.depth === 0 ? 'drained' : `NOT drained (${d.depth} left)`} ${d.drainSeconds.toFixed(2)} s after the last close${d.complete ? '' : ' ⚠ incomplete'}`;

/** The 2-node shared-cores joins again, with the key's webhook on; then its delivery. */
async function webhookJoins(
  o: PresenceOptions,
  nodes: number,
): Promise<{ joins: ConnectRate; delivery: WebhookDelivery }> {
  const sink = new WebhookReceiver({ record: false, host: HOST });
  await sink.up();
  const system = await startSystem('switchboard-redis', { nodes, env: webhookEnv(sink) });
  const fleet = connectFleet(o.workers, o.log);
  try {
    const total = o.connectionsPerNode * nodes;
    const urls = Array.from({ length: total }, (_, i) =>
      system.wsUrl(i, 'v4', `pres-${Math.floor(i / o.channelSize)}`, `&presence=1&user=u${i}`),
    );
    const joins = await measureJoins(system, fleet, urls, nodes);
    const delivery = await drainWebhooks(system, fleet, sink, joins.ok + (joins.warmUp ?? 0));
    return { joins, delivery };
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await system.stop();
    await sink.down();
  }
}

/**
 * One server pinned to CPU 0, Redis, the clients and this harness to the others (see
 * `PresenceResult.ownCore`): presence joins against Switchboard, plain connections against the
 * ceiling. Skipped on a single-CPU machine.
 */
async function ownCoreRate(
  o: PresenceOptions,
  name: 'switchboard-redis' | 'ceiling-redis',
  /** With a webhook on the key to this receiver (Switchboard only); its delivery is checked after. */
  sink?: WebhookReceiver,
): Promise<{ rate: ConnectRate; delivery?: WebhookDelivery } | undefined> {
  const cpuCount = cpus().length;
  if (cpuCount < 2) return undefined;
  const system = await startSystem(name, { nodes: 1, ...(sink ? { env: webhookEnv(sink) } : {}) });
  const fleet = connectFleet(o.workers, o.log);
  const others = `1-${cpuCount - 1}`;
  try {
    pinToCpus(system.nodes[0]!.pid, '0');
    for (const pid of [system.redisPid ?? 0, ...fleet.pids, process.pid]) if (pid) pinToCpus(pid, others);
    const presence = name === 'switchboard-redis' ? '&presence=1' : '';
    const urls = Array.from({ length: o.connectionsPerNode }, (_, i) =>
      system.wsUrl(0, 'v4', `pres-${Math.floor(i / o.channelSize)}`, `${presence}&user=u${i}`),
    );
    const measured = await measureJoins(system, fleet, urls, 1, presence ? 'system::member_list' : null);
    if (!sink) return { rate: measured };
    const joins = measured.ok + (measured.warmUp ?? 0);
    return { rate: measured, delivery: await drainWebhooks(system, fleet, sink, joins) };
  } finally {
    pinToCpus(process.pid, `0-${cpuCount - 1}`);
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await system.stop();
  }
}

export async function presenceScenario(o: PresenceOptions): Promise<PresenceResult> {
  const nodes = 2;
  const result: PresenceResult = { nodes, channelSize: o.channelSize };
  const total = o.connectionsPerNode * nodes;
  // Switchboard: V4 presence joins, a join counted when its `system::member_list` arrives (written to Redis by then).
  {
    const system = await startSystem('switchboard-redis', { nodes });
    const fleet = connectFleet(o.workers, o.log);
    result.connectClient = fleet instanceof ClientFleet ? 'node' : 'native';
    const redis = new Redis(system.redis!.url);
    try {
      const urls = Array.from({ length: total }, (_, i) =>
        system.wsUrl(i, 'v4', `pres-${Math.floor(i / o.channelSize)}`, `&presence=1&user=u${i}`),
      );
      result.joins = await measureJoins(system, fleet, urls, nodes);
      o.log(
        `  joins: ${result.joins.ok}/${total} in ${result.joins.seconds.toFixed(2)} s = ${describe(result.joins)}`,
      );
      // Every presence entry of the key, whatever its node (docs/redis-keys.md: the key's by-node index).
      const byNode = `${REDIS_PREFIX}:presence:{${KEY}}:by-node`;
      const entries = (): Promise<number> => redis.zcard(byNode);
      const before = await entries();
      const start = performance.now();
      await fleet.closeAll();
      let left = before;
      const deadline = Date.now() + 30_000;
      while (left > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
        left = await entries();
      }
      const seconds = (performance.now() - start) / 1000;
      result.leaves = {
        connections: before,
        seconds,
        perSecond: before / seconds,
        perSecondPerNode: before / seconds / nodes,
        complete: left === 0,
      };
      o.log(
        `  leaves: ${before} presence entries gone in ${seconds.toFixed(2)} s = ${Math.round(result.leaves.perSecondPerNode)}/s per node`,
      );
      await fillPresence(system.redis!.url, REDIS_PREFIX, KEY, 'members-10k', o.members);
      const timed = await timeRequests(
        system.nodes[0]!.port,
        '/api/v4/members',
        { key: KEY, secret: SECRET, channel: 'members-10k', paginate: 1, page: 1, limit: 100 },
        o.requests,
      );
      const count = (JSON.parse(timed.last) as { count?: number }).count ?? 0;
      result.members = {
        members: o.members,
        requests: o.requests,
        count,
        medianMs: median(timed.times),
        p95Ms: p95(timed.times),
      };
      o.log(
        `  members page (count ${count}): median ${result.members.medianMs.toFixed(3)} ms, p95 ${result.members.p95Ms.toFixed(3)} ms`,
      );
    } catch (error) {
      result.error = String(error);
      o.log(`  ERROR ${result.error}`);
    } finally {
      redis.disconnect();
      await fleet.closeAll().catch(() => undefined);
      fleet.stop();
      await system.stop();
    }
  }
  // The same 2-node joins with the key's webhook on (every event, to a receiver in this process).
  try {
    const hooked = await webhookJoins(o, nodes);
    result.webhooks = { joins: hooked.joins, joinsDelivery: hooked.delivery };
    o.log(
      `  joins, webhooks on: ${hooked.joins.ok}/${total} in ${hooked.joins.seconds.toFixed(2)} s = ${describe(hooked.joins)}`,
    );
    o.log(`  ${describeDelivery(hooked.delivery)}`);
  } catch (error) {
    result.error = `${result.error ?? ''} webhooks: ${String(error)}`;
    o.log(`  ERROR ${result.error}`);
  }
  try {
    const ownCore = (await ownCoreRate(o, 'switchboard-redis'))?.rate;
    const sink = new WebhookReceiver({ record: false, host: HOST });
    await sink.up();
    const hooked = await ownCoreRate(o, 'switchboard-redis', sink).finally(() => sink.down());
    const ownCoreCeiling = (await ownCoreRate(o, 'ceiling-redis'))?.rate;
    if (hooked) {
      result.webhooks = { ...result.webhooks, ownCore: hooked.rate };
      if (hooked.delivery) result.webhooks.ownCoreDelivery = hooked.delivery;
      o.log(
        `  one node on its own core, webhooks on: ${hooked.rate.ok}/${hooked.rate.connections} in ${hooked.rate.seconds.toFixed(2)} s = ${describe(hooked.rate)}`,
      );
      if (hooked.delivery) o.log(`  ${describeDelivery(hooked.delivery)}`);
    }
    if (ownCore && ownCoreCeiling) {
      result.ownCore = ownCore;
      result.ownCoreCeiling = ownCoreCeiling;
      o.log(
        `  one node on its own core: ${ownCore.ok}/${ownCore.connections} in ${ownCore.seconds.toFixed(2)} s = ${describe(ownCore)}`,
      );
      o.log(`  ceiling on its own core, plain connections: ${describe(ownCoreCeiling)}`);
    }
  } catch (error) {
    result.error = `${result.error ?? ''} own core: ${String(error)}`;
    o.log(`  ERROR ${result.error}`);
  }
  // Ceiling: the same clients opening plain connections; a ZRANGE of 100 behind one HTTP request.
  {
    const system = await startSystem('ceiling-redis', { nodes });
    const fleet = connectFleet(o.workers, o.log);
    const redis = new Redis(system.redis!.url);
    try {
      const urls = Array.from({ length: total }, (_, i) =>
        system.wsUrl(i, 'v4', `pres-${Math.floor(i / o.channelSize)}`, `&user=u${i}`),
      );
      await fleet.connect(
        urls.slice(0, WARM_UP).map((u) => u.replace('pres-', 'warm-')),
        { concurrency: 200 },
      );
      await fleet.closeAll();
      const cpuBefore = cpuOf(system, fleet);
      const opened = await fleet.connect(urls, { concurrency: 400 });
      result.ceilingConnects = rate(
        total,
        opened.ok,
        opened.failed,
        opened.openSeconds,
        nodes,
        cpuSince(cpuBefore, cpuOf(system, fleet)),
        opened.firstError,
      );
      o.log(
        `  ceiling connects: ${opened.ok}/${total} in ${opened.openSeconds.toFixed(2)} s = ${describe(result.ceilingConnects)}`,
      );
      for (let i = 0; i < o.members; i += 1000) {
        const args: (string | number)[] = [];
        for (let j = i; j < Math.min(o.members, i + 1000); j++) args.push(-j, `user-${j}`);
        await redis.zadd('members-10k', ...args);
      }
      const timed = await timeRequests(system.nodes[0]!.port, '/members', { set: 'members-10k' }, o.requests);
      result.ceilingMembers = {
        members: o.members,
        requests: o.requests,
        medianMs: median(timed.times),
        p95Ms: p95(timed.times),
      };
      o.log(`  ceiling members: median ${result.ceilingMembers.medianMs.toFixed(3)} ms`);
    } catch (error) {
      result.error = `${result.error ?? ''} ceiling: ${String(error)}`;
      o.log(`  ERROR ${result.error}`);
    } finally {
      redis.disconnect();
      await fleet.closeAll().catch(() => undefined);
      fleet.stop();
      await system.stop();
    }
  }
  return result;
}
