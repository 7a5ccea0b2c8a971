import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { KeepAliveConnection, postRequest } from '../../lib/http';
import { nativeFleet } from '../../lib/native-fleet';
import type { NativeFleet } from '../../lib/native-fleet';
import { cpuOf } from '../../lib/cpu';
import { nowUs } from '../../lib/payload';
import { fillPresence } from '../../lib/product';
import {
  HOST,
  KEY,
  REDIS_PREFIX,
  SECRET,
  fdLimitOf,
  reachableFdLimit,
  rssKiB,
  startSystem,
} from '../../lib/procs';
import type { System } from '../../lib/procs';
import { median, p95, timeRequests } from '../presence/run';

/** The scale scenario's targets (issue 16). */
export const SCALE_TARGETS = { rssKiBPerConnection: 2, publishP99Ms: 300 };

export interface ScalePublish {
  /** Sockets open when the publish went out, and those that received it. */
  open: number;
  seen: number;
  /** Sockets the server closed since they opened (a socket drop is an error). */
  dropped: number;
  /** The HTTP publish's answer, ms after it was sent. */
  answeredMs: number;
  /** Publish → delivery over every socket that received it, ms. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  status: number;
  /**
   * CPU seconds from just before the publish to its last delivery: servers, Redis, clients. On a
   * shared 2-core machine the latency shows what else runs; the servers' CPU per delivery does not.
   */
  cpu: { servers: number; redis: number; clients: number };
  serverCpuUsPerDelivery: number;
  /** The same, less what the servers spend with nothing published (pings, timers) over as long. */
  netServerCpuUsPerDelivery?: number;
}

export interface ScaleSystem {
  system: 'switchboard-redis' | 'ceiling-redis';
  nodes: number;
  connections: number;
  /** The open-file limit each server process got. */
  serverFdLimit: number;
  connect: {
    ok: number;
    failed: number;
    seconds: number;
    perSecond: number;
    /** CPU seconds of the servers, Redis and the clients over the connect. */
    cpu: { servers: number; redis: number; clients: number };
    firstError?: string;
  };
  rss: { node: number; beforeKiB: number; afterKiB: number; connections: number; perConnectionKiB: number }[];
  /** (sum of the nodes' RSS growth) / (all connections). */
  rssKiBPerConnection: number;
  publishes: ScalePublish[];
  /** Server CPU seconds per second with every socket open and nothing published (pings, timers). */
  idleServerCpuPerSecond?: number;
  /** The publish with the median p99 (the one the report shows). */
  publish?: ScalePublish;
  members?: ScaleMembers;
  errors: string[];
}

export interface ScaleMembers {
  members: number;
  /**
   * Switchboard: real V4 presence sockets that joined last, one at a time, into the channel of
   * `members - joins.count` stored members; each timed from its connect to its member list.
   */
  joins?: { count: number; joined: number; medianMs: number; maxMs: number };
  /** Seconds to write the members through the product's presence store (or ZADD for the ceiling). */
  fillSeconds: number;
  count?: number;
  requests: number;
  medianMs: number;
  p95Ms: number;
}

export interface ScaleResult {
  connections: number;
  /** The node count asked for, and the one used (more when a process cannot open enough files). */
  requestedNodes: number;
  nodes: number;
  clients: number;
  sourcesPerClient: number;
  /** The open-file limit this harness could give one process. */
  reachableFdLimit: number;
  members: number;
  systems: ScaleSystem[];
}

export interface ScaleOptions {
  connections: number;
  nodes: number;
  members: number;
  publishes: number;
  log: (line: string) => void;
}

/** Files a server process keeps beyond its sockets (Redis connections, libraries, logs), with room. */
const SERVER_SLACK = 1024;
/** Sockets one `connect-load` process holds at most (it shares the machine's 2 cores anyway). */
const PER_CLIENT = 20_000;
const SOURCES_PER_CLIENT = 64;
const WARM_UP = 1000;
const CONCURRENCY = 1000;
const CHANNEL = 'scale';
const MEMBERS_CHANNEL = 'scale-members';
/** Members of the presence channel that join through real sockets (the rest are stored). */
const REAL_JOINS = 10;
/** How long the servers' idle CPU (every socket open, nothing published) is measured. */
const IDLE_WINDOW_MS = 2000;

const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The layout: `nodes` servers holding `connections` between them, more when one process cannot
 * get the open files its share needs (without CAP_SYS_RESOURCE the hard limit cannot be raised,
 * and the harness never changes the machine's settings), and enough client processes.
 */
export function scaleLayout(o: Pick<ScaleOptions, 'connections' | 'nodes'>): {
  nodes: number;
  clients: number;
  fdLimit: number;
  reachable: number;
} {
  const want = Math.ceil(o.connections / o.nodes) + SERVER_SLACK;
  const reachable = reachableFdLimit(Math.max(want, PER_CLIENT + 256));
  // A small limit (1,024 on many machines) still leaves most of it to sockets.
  const slack = serverSlack(reachable);
  const nodes = Math.max(o.nodes, Math.ceil(o.connections / (reachable - slack)));
  const perClient = Math.min(PER_CLIENT, reachable - 256);
  const clients = Math.max(2, Math.ceil(o.connections / perClient));
  return {
    nodes,
    clients,
    fdLimit: Math.min(reachable, Math.ceil(o.connections / nodes) + slack),
    reachable,
  };
}

/** Files a server process is given beyond its share of sockets, at a reachable limit. */
export const serverSlack = (reachable: number): number => Math.min(SERVER_SLACK, Math.floor(reachable / 4));

const percentile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * q) - 1))] ?? 0;

/** One publish to the channel every socket is on, timed to its arrival on each socket. */
async function publishOnce(system: System, fleet: NativeFleet, node: number): Promise<ScalePublish> {
  const marker = `scale-${randomBytes(8).toString('hex')}`;
  // 100 bytes, the size of the other scenarios' payload.
  const message = `${marker}-${'x'.repeat(100 - marker.length - 1)}`;
  const isSwitchboard = system.name.startsWith('switchboard');
  const body = isSwitchboard
    ? { key: KEY, secret: SECRET, channel: CHANNEL, message }
    : { channel: CHANNEL, message };
  const port = system.nodes[node % system.nodes.length]!.port;
  const connection = new KeepAliveConnection(HOST, port);
  await connection.open();
  try {
    const open = await fleet.watch(marker);
    const request = postRequest(
      HOST,
      port,
      isSwitchboard ? '/api/v4/publish' : '/publish',
      JSON.stringify(body),
    );
    const cpuBefore = cpuOf(system, fleet);
    const since = nowUs();
    const answer = await connection.request(request);
    const answeredMs = (nowUs() - since) / 1000;
    const report = await fleet.deliveries(since, 30_000);
    const cpuAfter = cpuOf(system, fleet);
    const cpu = {
      servers: cpuAfter.servers - cpuBefore.servers,
      redis: cpuAfter.redis - cpuBefore.redis,
      clients: cpuAfter.clients - cpuBefore.clients,
    };
    const ms = report.us.map((us) => us / 1000);
    return {
      open: Math.min(open, report.open),
      seen: report.seen,
      dropped: report.dropped,
      answeredMs,
      p50Ms: percentile(ms, 0.5),
      p99Ms: percentile(ms, 0.99),
      maxMs: ms[ms.length - 1] ?? 0,
      status: answer.status,
      cpu,
      serverCpuUsPerDelivery: (cpu.servers * 1e6) / Math.max(1, report.seen),
    };
  } finally {
    connection.close();
  }
}

/** A members page of `members` (Switchboard: V4, filled through its presence store; ceiling: one ZRANGE). */
async function membersPage(system: System, fleet: NativeFleet, members: number): Promise<ScaleMembers> {
  const requests = 300;
  const start = performance.now();
  if (system.name.startsWith('switchboard')) {
    const real = Math.min(REAL_JOINS, members);
    await fillPresence(system.redis!.url, REDIS_PREFIX, KEY, MEMBERS_CHANNEL, members - real);
    const fillSeconds = (performance.now() - start) / 1000;
    const times: number[] = [];
    let joined = 0;
    for (let i = 0; i < real; i++) {
      const t0 = performance.now();
      const done = await fleet.connect(
        [system.wsUrl(0, 'v4', MEMBERS_CHANNEL, `&presence=1&user=scale-real-${i}`)],
        { concurrency: 1, joinMarker: 'system::member_list', timeoutMs: 30_000 },
      );
      times.push(performance.now() - t0);
      joined += done.joined;
    }
    const sortedTimes = [...times].sort((a, b) => a - b);
    const timed = await timeRequests(
      system.nodes[0]!.port,
      '/api/v4/members',
      { key: KEY, secret: SECRET, channel: MEMBERS_CHANNEL, paginate: 1, page: 1, limit: 100 },
      requests,
    );
    const count = (JSON.parse(timed.last) as { count?: number }).count ?? 0;
    return {
      members,
      joins: {
        count: real,
        joined,
        medianMs: median(times),
        maxMs: sortedTimes[sortedTimes.length - 1] ?? 0,
      },
      fillSeconds,
      count,
      requests,
      medianMs: median(timed.times),
      p95Ms: p95(timed.times),
    };
  }
  const redis = new Redis(system.redis!.url);
  try {
    for (let i = 0; i < members; i += 1000) {
      const args: (string | number)[] = [];
      for (let j = i; j < Math.min(members, i + 1000); j++) args.push(-j, `user-${j}`);
      await redis.zadd(MEMBERS_CHANNEL, ...args);
    }
  } finally {
    redis.disconnect();
  }
  const fillSeconds = (performance.now() - start) / 1000;
  const timed = await timeRequests(system.nodes[0]!.port, '/members', { set: MEMBERS_CHANNEL }, requests);
  return { members, fillSeconds, requests, medianMs: median(timed.times), p95Ms: p95(timed.times) };
}

async function scaleSystem(
  name: ScaleSystem['system'],
  layout: ReturnType<typeof scaleLayout>,
  o: ScaleOptions,
): Promise<ScaleSystem> {
  const system = await startSystem(name, { nodes: layout.nodes, fdLimit: layout.fdLimit });
  const fleet = nativeFleet(layout.clients, o.log, { fdLimit: Math.min(layout.reachable, PER_CLIENT + 256) });
  const result: ScaleSystem = {
    system: name,
    nodes: layout.nodes,
    connections: o.connections,
    serverFdLimit: Math.min(...system.nodes.map((n) => fdLimitOf(n.pid))),
    connect: { ok: 0, failed: 0, seconds: 0, perSecond: 0, cpu: { servers: 0, redis: 0, clients: 0 } },
    rss: [],
    rssKiBPerConnection: 0,
    publishes: [],
    errors: [],
  };
  try {
    await fleet.spreadSources(SOURCES_PER_CLIENT);
    const url = (i: number): string => system.wsUrl(i, 'v4', CHANNEL);
    // Warm-up (not counted): code paths loaded and optimized before the baseline RSS.
    await fleet.connect(
      Array.from({ length: WARM_UP }, (_, i) => system.wsUrl(i, 'v4', `warm-${i % 10}`)),
      { concurrency: 200 },
    );
    await fleet.closeAll();
    await settle(1500);
    const before = system.nodes.map((n) => rssKiB(n.pid));
    const cpuBefore = cpuOf(system, fleet);
    const opened = await fleet.connect(
      Array.from({ length: o.connections }, (_, i) => url(i)),
      { concurrency: CONCURRENCY, timeoutMs: 600_000 },
    );
    const cpuAfter = cpuOf(system, fleet);
    result.connect = {
      ok: opened.ok,
      failed: opened.failed,
      seconds: opened.openSeconds,
      perSecond: opened.ok / Math.max(opened.openSeconds, 1e-6),
      cpu: {
        servers: cpuAfter.servers - cpuBefore.servers,
        redis: cpuAfter.redis - cpuBefore.redis,
        clients: cpuAfter.clients - cpuBefore.clients,
      },
      ...(opened.firstError ? { firstError: opened.firstError } : {}),
    };
    o.log(
      `  ${name}: ${opened.ok}/${o.connections} open in ${opened.openSeconds.toFixed(1)} s (${Math.round(result.connect.perSecond)}/s); CPU s servers ${result.connect.cpu.servers.toFixed(1)}, Redis ${result.connect.cpu.redis.toFixed(1)}, clients ${result.connect.cpu.clients.toFixed(1)}` +
        (opened.firstError ? `; first error: ${opened.firstError}` : ''),
    );
    if (opened.failed > 0)
      result.errors.push(`${opened.failed} connections failed (${opened.firstError ?? '?'})`);
    await settle(2000);
    const perNode = Math.ceil(opened.ok / layout.nodes);
    result.rss = system.nodes.map((n, i) => {
      const afterKiB = rssKiB(n.pid);
      const connections = Math.floor(opened.ok / layout.nodes) + (i < opened.ok % layout.nodes ? 1 : 0);
      return {
        node: i,
        beforeKiB: before[i]!,
        afterKiB,
        connections,
        perConnectionKiB: (afterKiB - before[i]!) / Math.max(1, connections),
      };
    });
    const grown = result.rss.reduce((sum, r) => sum + r.afterKiB - r.beforeKiB, 0);
    result.rssKiBPerConnection = grown / Math.max(1, opened.ok);
    o.log(
      `  RSS per connection ${result.rssKiBPerConnection.toFixed(2)} KiB (${result.rss.map((r) => `${(r.beforeKiB / 1024).toFixed(0)}→${(r.afterKiB / 1024).toFixed(0)} MiB`).join(', ')}; ~${perNode} per node)`,
    );
    const idleStart = performance.now();
    const idleBefore = cpuOf(system, fleet).servers;
    await settle(IDLE_WINDOW_MS);
    const idleRate = (cpuOf(system, fleet).servers - idleBefore) / ((performance.now() - idleStart) / 1000);
    result.idleServerCpuPerSecond = idleRate;
    for (let i = 0; i < o.publishes; i++) {
      const p = await publishOnce(system, fleet, i);
      p.netServerCpuUsPerDelivery =
        (Math.max(0, p.cpu.servers - (idleRate * p.maxMs) / 1000) * 1e6) / Math.max(1, p.seen);
      result.publishes.push(p);
      o.log(
        `  publish ${i + 1}: ${p.seen}/${p.open} delivered, p50 ${p.p50Ms.toFixed(1)} ms, p99 ${p.p99Ms.toFixed(1)} ms, max ${p.maxMs.toFixed(1)} ms (answered in ${p.answeredMs.toFixed(1)} ms, status ${p.status}); CPU s servers ${p.cpu.servers.toFixed(2)} (${p.serverCpuUsPerDelivery.toFixed(2)} µs per delivery, ${p.netServerCpuUsPerDelivery.toFixed(2)} less idle), Redis ${p.cpu.redis.toFixed(2)}, clients ${p.cpu.clients.toFixed(2)}`,
      );
      if (p.status !== 200) result.errors.push(`publish ${i + 1} answered ${p.status}`);
      if (p.seen < p.open) result.errors.push(`publish ${i + 1} reached ${p.seen} of ${p.open} sockets`);
      if (p.dropped > 0) result.errors.push(`${p.dropped} sockets closed by the server`);
      if (p.open < opened.ok)
        result.errors.push(`only ${p.open} of ${opened.ok} sockets open at publish ${i + 1}`);
    }
    const byP99 = [...result.publishes].sort((a, b) => a.p99Ms - b.p99Ms);
    const mid = byP99[Math.floor((byP99.length - 1) / 2)];
    if (mid) result.publish = mid;
    const m = await membersPage(system, fleet, o.members);
    result.members = m;
    o.log(
      `  members page of ${m.members} (filled in ${m.fillSeconds.toFixed(2)} s${m.count !== undefined ? `, count ${m.count}` : ''}): median ${m.medianMs.toFixed(2)} ms, p95 ${m.p95Ms.toFixed(2)} ms` +
        (m.joins
          ? `; ${m.joins.joined}/${m.joins.count} real presence joins into it, median ${m.joins.medianMs.toFixed(1)} ms, max ${m.joins.maxMs.toFixed(1)} ms to the member list`
          : ''),
    );
    if (m.joins && m.joins.joined < m.joins.count)
      result.errors.push(`${m.joins.count - m.joins.joined} presence joins got no member list`);
    if (m.count !== undefined && m.count !== m.members)
      result.errors.push(`member count ${m.count}, not ${m.members}`);
  } catch (error) {
    result.errors.push(String(error));
    o.log(`  ERROR ${String(error)}`);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await system.stop();
  }
  // Errors the gateways logged (LOG_LEVEL=warn: warnings and errors only).
  for (const [i, node] of system.nodes.entries()) {
    const logged = node.lines.filter((line) => /"level":(50|60)|"level":"(error|fatal)"/.test(line));
    if (logged.length)
      result.errors.push(`node ${i + 1} logged ${logged.length} errors: ${logged[0]!.slice(0, 200)}`);
  }
  return result;
}

/**
 * `connections` sockets on one channel over `nodes` servers + Redis: connect time, RSS per
 * connection, one publish delivered to all, a members page; the Redis-hop ceiling first, then
 * Switchboard, in the same run. See docs/benchmarks.md (Scale).
 */
export async function scaleScenario(o: ScaleOptions): Promise<ScaleResult> {
  const layout = scaleLayout(o);
  if (layout.nodes > o.nodes)
    o.log(
      `  a process can open at most ${layout.reachable} files here (the hard limit; raising it needs CAP_SYS_RESOURCE): ${layout.nodes} servers instead of ${o.nodes}`,
    );
  o.log(
    `  ${layout.nodes} servers (open-file limit ${layout.fdLimit}), ${layout.clients} client processes × ${SOURCES_PER_CLIENT} source addresses`,
  );
  const systems: ScaleSystem[] = [];
  for (const name of ['ceiling-redis', 'switchboard-redis'] as const)
    systems.push(await scaleSystem(name, layout, o));
  return {
    connections: o.connections,
    requestedNodes: o.nodes,
    nodes: layout.nodes,
    clients: layout.clients,
    sourcesPerClient: SOURCES_PER_CLIENT,
    reachableFdLimit: layout.reachable,
    members: o.members,
    systems,
  };
}
