import { loadavg } from 'node:os';
import { cpuOf, cpuSince } from '../../lib/cpu';
import type { CpuUse } from '../../lib/cpu';
import { ClientFleet, fleetDefaults } from '../../lib/fleet';
import { isPusherSystem, startSystem } from '../../lib/procs';
import type { SystemName } from '../../lib/procs';
import { memoryCase } from '../memory/run';
import type { MemoryCase } from '../memory/run';
import { TARGET_SHARE, throughputCase } from '../throughput/run';
import type { ThroughputCase } from '../throughput/run';

/**
 * The Pusher-protocol throughput scenario (`--scenario pusher`): fan-out 1 channel × N and many
 * channels C × 2, over 2 nodes + Redis, for Pusher subscribers (`/app/{key}?protocol=7`,
 * pusher:subscribe) and publishes through Pusher's signed HTTP API (`POST /apps/{id}/events`).
 * The same search, steps and measurements as the fan-out and many-channels scenarios, so
 * deliveries per second and p99 compare with theirs; the Redis-hop ceiling runs in the same
 * round as the reference for Switchboard's target share.
 */
export interface PusherCase extends ThroughputCase {
  /** The machine's 1/5/15-minute load averages when the case started and ended (a shared machine). */
  loadBefore: number[];
  loadAfter: number[];
}

export interface PusherShape {
  kind: 'fanout' | 'channels';
  label: string;
  channels: number;
  subscribersPerChannel: number;
  runs: Partial<Record<SystemName, PusherCase[]>>;
  median: Partial<Record<SystemName, PusherCase>>;
}

/**
 * Presence joins through the Node clients on 2 nodes + Redis, channels of `channelSize` members:
 * Pusher subscribers to `presence-…` channels (each signs its own authorization with the app's
 * secret, as a backend's `authorizeChannel` would), and for reference Switchboard's V3 presence
 * (`presence=1`, joined on `system:member_list`). A join is complete on
 * `pusher_internal:subscription_succeeded` (or the member list); CPU is the servers' and Redis'
 * from the first connect to the last join, connection included.
 */
export interface PresenceJoins {
  system: SystemName;
  protocol: 'pusher' | 'v3';
  connections: number;
  channelSize: number;
  ok: number;
  seconds: number;
  perSecond: number;
  cpu: CpuUse;
  /** Server + Redis CPU per join (µs). */
  serverCpuUsPerJoin: number;
  loadBefore: number[];
  loadAfter: number[];
  error?: string;
}

export async function presenceJoins(
  system: SystemName,
  o: { connections: number; channelSize: number; workers: number; log: (line: string) => void },
): Promise<PresenceJoins> {
  const pusher = isPusherSystem(system);
  const result: PresenceJoins = {
    system,
    protocol: pusher ? 'pusher' : 'v3',
    connections: o.connections,
    channelSize: o.channelSize,
    ok: 0,
    seconds: 0,
    perSecond: 0,
    cpu: { servers: 0, redis: 0, clients: 0 },
    serverCpuUsPerJoin: 0,
    loadBefore: load(),
    loadAfter: [],
  };
  const running = await startSystem(system, { nodes: 2 });
  const fleet = new ClientFleet(o.workers, fleetDefaults.client, pusher ? 'pusher-client.js' : 'client.js');
  try {
    const urls = Array.from({ length: o.connections }, (_, i) =>
      running.wsUrl(i, 'v3', `presence-join-${Math.floor(i / o.channelSize)}`, `&presence=1&user=u${i}`),
    );
    const before = cpuOf(running, fleet);
    const done = await fleet.connect(urls, {
      concurrency: 200,
      ...(pusher ? {} : { joinMarker: 'system:member_list' }),
    });
    result.cpu = cpuSince(before, cpuOf(running, fleet));
    result.ok = done.joined;
    result.seconds = done.joinSeconds;
    result.perSecond = done.joinSeconds > 0 ? done.joined / done.joinSeconds : 0;
    result.serverCpuUsPerJoin = done.joined
      ? ((result.cpu.servers + result.cpu.redis) * 1e6) / done.joined
      : 0;
    if (done.joined < o.connections)
      result.error = `${done.joined}/${o.connections} joined${done.firstError ? `: ${done.firstError}` : ''}`;
    o.log(
      `  ${system} (${result.protocol}): ${done.joined}/${o.connections} presence joins in ${done.joinSeconds.toFixed(2)} s = ${Math.round(result.perSecond)}/s, server + Redis CPU ${Math.round(result.serverCpuUsPerJoin)} µs per join` +
        (result.error ? ` ⚠ ${result.error}` : ''),
    );
  } catch (error) {
    result.error = String(error);
    o.log(`  ERROR ${result.error}`);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await running.stop();
    result.loadAfter = load();
  }
  return result;
}

export interface PusherResults {
  shapes: PusherShape[];
  /** Most publishes one request carried (`--pusher-batch`); absent in runs from before it existed: 1. */
  publishBatch?: number;
  presence?: PresenceJoins[];
  /** Idle memory per Pusher connection on one node (absent with `--idle` unset). */
  memory?: MemoryCase[];
}

/**
 * The section's systems, in the order each round runs them: the Redis-hop ceiling; the history
 * floor (the ceiling storing each publication with the product's publish scripts, a batch in one
 * call as a gateway does: the least any server keeping history this way can cost); Soketi;
 * Switchboard. The ceiling and the floor serve the same Pusher clients the same Pusher frames as
 * the Pusher servers (`PUSHER_FRAMES`, bench/src/ceiling/server.ts): on a machine whose clients
 * share the CPUs with the servers, clients fed smaller frames would leave more CPU to the
 * reference than to the server measured against it.
 */
export const PUSHER_SYSTEMS: SystemName[] = [
  'ceiling-redis-pusher',
  'ceiling-redis-script-pusher',
  'soketi',
  'switchboard-pusher',
];

/** The references, by the names this scenario gave them (before 2026-11-27 noon: V3-style clients). */
export const CEILINGS: readonly SystemName[] = ['ceiling-redis-pusher', 'ceiling-redis'];
export const FLOORS: readonly SystemName[] = ['ceiling-redis-script-pusher', 'ceiling-redis-script'];

/** A shape's runs of the first of `names` it has. */
export const runsOf = (
  runs: Partial<Record<SystemName, PusherCase[]>>,
  names: readonly SystemName[],
): PusherCase[] | undefined => names.map((name) => runs[name]).find((r) => r !== undefined);

/** The reference systems: no idle-memory or presence rows. */
const isCeiling = (system: SystemName): boolean => CEILINGS.includes(system) || FLOORS.includes(system);

/** Issue 32's targets: deliveries/s at least this many times Soketi's on the same workload. */
export const SOKETI_MULTIPLE = 5;

export interface PusherOptions {
  systems: SystemName[];
  fanoutSubscribers: number;
  channels: number;
  runs: number;
  workers: number;
  durationMs: number;
  stepMs: number;
  refine: number;
  maxP99Ms: number;
  /** Idle Pusher connections on one node for the memory measurement (0: none). */
  idle: number;
  /**
   * Most publishes one request carries, for every system of the scenario alike (`batch_events`
   * for the Pusher servers, the ceiling's batch body): the publisher is then not what limits a
   * step (docs/benchmarks.md, "Pusher protocol").
   */
  publishBatch: number;
  /** Presence joins per system (0: none), in channels of 10. */
  presenceJoins: number;
  log: (line: string) => void;
}

const load = (): number[] => loadavg().map((l) => Math.round(l * 100) / 100);

function medianCase(runs: PusherCase[]): PusherCase {
  const sorted = [...runs].sort(
    (a, b) => (a.max?.deliveriesPerSecond ?? 0) - (b.max?.deliveriesPerSecond ?? 0),
  );
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export async function pusherScenario(o: PusherOptions): Promise<PusherResults> {
  const shapes = [
    {
      kind: 'fanout' as const,
      label: `1 channel × ${o.fanoutSubscribers.toLocaleString('en-US')} subscribers`,
      channels: 1,
      subs: o.fanoutSubscribers,
    },
    {
      kind: 'channels' as const,
      label: `${o.channels.toLocaleString('en-US')} channels × 2 subscribers`,
      channels: o.channels,
      subs: 2,
    },
  ];
  const out: PusherShape[] = [];
  for (const shape of shapes) {
    o.log(`pusher ${shape.kind}: ${shape.label}`);
    const result: PusherShape = {
      kind: shape.kind,
      label: shape.label,
      channels: shape.channels,
      subscribersPerChannel: shape.subs,
      runs: {},
      median: {},
    };
    for (let run = 0; run < o.runs; run++) {
      for (const system of o.systems) {
        const ceiling = system === 'switchboard-pusher' ? runsOf(result.runs, CEILINGS)?.[run] : undefined;
        const sameRate = ceiling?.half?.rate;
        const targetRate = ceiling?.max?.pass
          ? Math.max(1, Math.round(ceiling.max.rate * TARGET_SHARE[shape.kind]))
          : undefined;
        const loadBefore = load();
        o.log(`  ${system}, run ${run + 1}/${o.runs}: load average ${loadBefore.join(' ')}`);
        const c = await throughputCase({
          system,
          nodes: 2,
          channels: shape.channels,
          subscribersPerChannel: shape.subs,
          channelPrefix: shape.kind === 'fanout' ? 'fan' : 'many',
          workers: o.workers,
          fixedDeliveries: shape.kind === 'fanout' ? 20_000 : 10_000,
          // Soketi's rates are far below the ceiling's: start lower, the search doubles upwards.
          startDeliveries:
            system === 'soketi'
              ? shape.kind === 'fanout'
                ? 100_000
                : 8_000
              : shape.kind === 'fanout'
                ? 800_000
                : 24_000,
          ...(sameRate ? { sameRate } : {}),
          ...(targetRate ? { targetRate } : {}),
          durationMs: o.durationMs,
          stepMs: o.stepMs,
          refine: o.refine,
          maxP99Ms: o.maxP99Ms,
          publishBatch: o.publishBatch,
          log: o.log,
        });
        (result.runs[system] ??= []).push({ ...c, loadBefore, loadAfter: load() });
      }
    }
    for (const system of o.systems) {
      const runs = result.runs[system];
      if (runs?.length) result.median[system] = medianCase(runs);
    }
    out.push(result);
  }
  const memory: MemoryCase[] = [];
  if (o.idle > 0) {
    o.log(`pusher memory: ${o.idle} idle Pusher connections on one node`);
    for (const system of o.systems) {
      if (isCeiling(system)) continue;
      // (The protocol argument only names V3/V4 subscribers; Pusher systems get Pusher ones.)
      const c = await memoryCase(system, 'v3', {
        connections: o.idle,
        channels: Math.max(1, Math.floor(o.idle / 10)),
        workers: o.workers,
        settleMs: 1500,
        log: o.log,
      });
      if (c.ok < o.idle && !c.error) c.error = `only ${c.ok}/${o.idle} subscribed`;
      memory.push(c);
    }
  }
  const presence: PresenceJoins[] = [];
  if (o.presenceJoins > 0) {
    o.log(`pusher presence: ${o.presenceJoins} presence joins on 2 nodes + Redis, channels of 10`);
    // Switchboard's V3 presence is the reference of issue 32's join-CPU target.
    const systems: SystemName[] = ['switchboard-redis', ...o.systems.filter((s) => !isCeiling(s))];
    for (let run = 0; run < o.runs; run++)
      for (const system of systems)
        presence.push(
          await presenceJoins(system, {
            connections: o.presenceJoins,
            channelSize: 10,
            workers: o.workers,
            log: o.log,
          }),
        );
  }
  return {
    shapes: out,
    publishBatch: o.publishBatch,
    ...(memory.length ? { memory } : {}),
    ...(presence.length ? { presence } : {}),
  };
}
