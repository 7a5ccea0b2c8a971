import Redis from 'ioredis';
import { ClientFleet, Publisher } from '../lib/fleet';
import { commandTimes } from '../lib/recovering-client';
import { cpuSeconds, startSystem } from '../lib/procs';
import type { SystemName } from '../lib/procs';
import { step } from './load';
import type { LoadSetup, Step } from './load';
import { PUBLISH_CONNECTIONS } from './throughput';

/**
 * The publish path's cost at a fixed, moderate rate (issue 12): many channels over REST, 2 nodes
 * + Redis, where every publish is a REST request, a key lookup, the engine's publish (on
 * Switchboard the history script) and a log append, and delivers to only 2 sockets. CPU per
 * delivery then measures what a publish costs, not what fan-out costs.
 */
export type CostVariant = 'ceiling' | 'script-floor' | 'history-on' | 'history-off' | 'history-on-opted-in';

/**
 * `script-floor` is no target: the ceiling server making Switchboard's publish script call
 * (history, offset, log record) instead of `PUBLISH`, with nothing else around it. Its ratio to
 * the ceiling is what storing history this way costs at the least; Switchboard's distance from
 * it is the gateway's own work.
 */
export const COST_SYSTEM: Record<CostVariant, SystemName> = {
  ceiling: 'ceiling-redis',
  'script-floor': 'ceiling-redis-script',
  'history-on': 'switchboard-redis',
  'history-off': 'switchboard-redis-history-off',
  'history-on-opted-in': 'switchboard-redis',
};

/** Subscribers' URL suffix: opted-in sockets get every publication with its offset. */
const EXTRA: Partial<Record<CostVariant, string>> = { 'history-on-opted-in': '&recover=1' };

/** How long the connected, idle system is sampled before the load. */
const IDLE_MS = 4000;

/** Issue 12's target: Switchboard (history on) at most this multiple of the ceiling's, CPU and p99. */
export const COST_TARGET = 1.25;

export interface CostCase {
  variant: CostVariant;
  system: SystemName;
  connected: number;
  step?: Step;
  /**
   * Redis' own time per command over the measurement (INFO commandstats: calls and µs; a
   * script's time includes the commands it runs, which are also listed on their own).
   */
  redis?: Record<string, { calls: number; usec: number }>;
  /** CPU per second with every socket connected and nothing published (ms/s): the cost of being up. */
  idle?: { servers: number; redis: number };
  error?: string;
}

/** One run: every variant measured one after the other, the ceiling first (a back-to-back set). */
export interface CostRun {
  cases: CostCase[];
}

export interface CostOptions {
  channels: number;
  subscribersPerChannel: number;
  rate: number;
  seconds: number;
  warmupSeconds: number;
  workers: number;
  variants: CostVariant[];
  /** Node flags for the server processes (`--node-flags`, e.g. `--cpu-prof --cpu-prof-dir=DIR`). */
  nodeOptions?: string;
  log: (line: string) => void;
}

export async function costCase(variant: CostVariant, o: CostOptions): Promise<CostCase> {
  const name = COST_SYSTEM[variant];
  const system = await startSystem(name, {
    nodes: 2,
    ...(o.nodeOptions ? { nodeOptions: o.nodeOptions } : {}),
  });
  const fleet = new ClientFleet(o.workers);
  const publisher = new Publisher();
  const result: CostCase = { variant, system: name, connected: 0 };
  try {
    const channels = Array.from({ length: o.channels }, (_, i) => `cost-${i}`);
    const urls: string[] = [];
    channels.forEach((channel, c) => {
      for (let j = 0; j < o.subscribersPerChannel; j++)
        urls.push(system.wsUrl(c * o.subscribersPerChannel + j, 'v3', channel, EXTRA[variant] ?? ''));
    });
    const opened = await fleet.connect(urls, { concurrency: 200 });
    result.connected = opened.ok;
    if (opened.ok < urls.length) throw new Error(`only ${opened.ok}/${urls.length} connected`);
    const sampleIdle = (): { servers: number; redis: number; at: number } => ({
      servers: system.nodes.reduce((sum, n) => sum + cpuSeconds(n.pid), 0),
      redis: system.redisPid ? cpuSeconds(system.redisPid) : 0,
      at: performance.now(),
    });
    await new Promise((r) => setTimeout(r, 1000));
    const idleFrom = sampleIdle();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleTo = sampleIdle();
    const idleSeconds = (idleTo.at - idleFrom.at) / 1000;
    result.idle = {
      servers: ((idleTo.servers - idleFrom.servers) * 1000) / idleSeconds,
      redis: ((idleTo.redis - idleFrom.redis) * 1000) / idleSeconds,
    };
    const setup: LoadSetup = {
      system,
      fleet,
      publisher,
      channels,
      subscribersPerChannel: o.subscribersPerChannel,
      maxP99Ms: 500,
      publishConnections: PUBLISH_CONNECTIONS,
    };
    // Warm-up at the same rate (JIT, Redis connections, every channel's first publish), not recorded.
    await step(setup, o.rate, o.warmupSeconds * 1000);
    const redis = new Redis(system.redis!.url);
    try {
      const before = commandTimes(await redis.info('commandstats'));
      result.step = await step(setup, o.rate, o.seconds * 1000);
      const after = commandTimes(await redis.info('commandstats'));
      result.redis = {};
      for (const [command, t] of Object.entries(after)) {
        const calls = t.calls - (before[command]?.calls ?? 0);
        if (calls > 0 && command !== 'info')
          result.redis[command] = { calls, usec: t.usec - (before[command]?.usec ?? 0) };
      }
    } finally {
      redis.disconnect();
    }
    const s = result.step;
    o.log(
      `  ${variant}: ${s.received}/${s.expected} delivered, CPU ${s.serverCpuMsPer1000.toFixed(1)} ms per 1,000 deliveries ` +
        `(gateways ${s.cpu.servers.toFixed(2)} s, Redis ${s.cpu.redis.toFixed(2)} s), p50 ${s.p50Ms} / p99 ${s.p99Ms} ms${s.pass ? '' : `, FAIL: ${s.why ?? ''}`}`,
    );
  } catch (error) {
    result.error = String(error);
    o.log(`  ${variant}: ERROR ${result.error}`);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    publisher.stop();
    await system.stop();
  }
  return result;
}

export async function publishCostScenario(o: CostOptions & { runs: number }): Promise<CostRun[]> {
  const runs: CostRun[] = [];
  for (let run = 0; run < o.runs; run++) {
    o.log(`  run ${run + 1} of ${o.runs}`);
    const cases: CostCase[] = [];
    for (const variant of o.variants) cases.push(await costCase(variant, o));
    runs.push({ cases });
  }
  return runs;
}

export interface CostRatio {
  cpu: number;
  p99: number;
}

/** A variant's CPU per 1,000 deliveries and p99 as multiples of its run's ceiling's. */
export function costRatios(run: CostRun, variant: CostVariant): CostRatio | undefined {
  const ceiling = run.cases.find((c) => c.variant === 'ceiling')?.step;
  const own = run.cases.find((c) => c.variant === variant)?.step;
  if (!ceiling || !own || !ceiling.serverCpuMsPer1000 || !ceiling.p99Ms) return undefined;
  if (own.loss > 0 || ceiling.loss > 0) return undefined;
  return { cpu: own.serverCpuMsPer1000 / ceiling.serverCpuMsPer1000, p99: own.p99Ms / ceiling.p99Ms };
}

const median = (values: number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export interface CostVerdict {
  /** Per run (runs with loss or a missing case left out). */
  ratios: CostRatio[];
  /** The median of the per-run ratios, each metric on its own. */
  cpu?: number;
  p99?: number;
  met?: boolean;
}

/**
 * Judged on the median of the per-run ratios (each run's cases are back to back, so the machine's
 * drift between runs cancels out; a single p99 over a few seconds is ruled by one stall). Met
 * when both medians are at most `COST_TARGET`; undecided without a complete run.
 */
export function costVerdict(runs: CostRun[], variant: CostVariant = 'history-on'): CostVerdict {
  const ratios = runs.map((r) => costRatios(r, variant)).filter((r): r is CostRatio => r !== undefined);
  const cpu = median(ratios.map((r) => r.cpu));
  const p99 = median(ratios.map((r) => r.p99));
  if (cpu === undefined || p99 === undefined) return { ratios };
  return { ratios, cpu, p99, met: cpu <= COST_TARGET && p99 <= COST_TARGET };
}
