import Redis from 'ioredis';
import { ClientFleet, Publisher } from '../../lib/fleet';
import { commandTimes } from '../../lib/redis-info';
import { cpuSeconds, startSystem } from '../../lib/procs';
import type { SystemName } from '../../lib/procs';
import { step } from '../load';
import type { LoadSetup, Step } from '../load';
import { PUBLISH_CONNECTIONS } from '../throughput/run';

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

/** Load before each measured window, not recorded: both sides of a pair start it together. */
const LEAD_IN_SECONDS = 1;

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

/** A back-to-back set: the ceiling's case and one variant's, measured over the same seconds. */
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

/** A variant's system, up and connected, between its measurements. */
interface OpenCase {
  readonly variant: CostVariant;
  readonly system: SystemName;
  readonly stop: () => Promise<void>;
  readonly setup?: LoadSetup;
  readonly redisUrl?: string;
  readonly connected: number;
  readonly idle?: { servers: number; redis: number };
  readonly error?: string;
}

/** Starts a variant's system, connects its subscribers and samples its idle CPU. */
async function openCase(variant: CostVariant, o: CostOptions): Promise<OpenCase> {
  const name = COST_SYSTEM[variant];
  const system = await startSystem(name, {
    nodes: 2,
    ...(o.nodeOptions ? { nodeOptions: o.nodeOptions } : {}),
  });
  const fleet = new ClientFleet(o.workers);
  const publisher = new Publisher();
  const stop = async (): Promise<void> => {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    publisher.stop();
    await system.stop();
  };
  let connected = 0;
  try {
    const channels = Array.from({ length: o.channels }, (_, i) => `cost-${i}`);
    const urls: string[] = [];
    channels.forEach((channel, c) => {
      for (let j = 0; j < o.subscribersPerChannel; j++)
        urls.push(system.wsUrl(c * o.subscribersPerChannel + j, 'v3', channel, EXTRA[variant] ?? ''));
    });
    const opened = await fleet.connect(urls, { concurrency: 200 });
    connected = opened.ok;
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
    const setup: LoadSetup = {
      system,
      fleet,
      publisher,
      channels,
      subscribersPerChannel: o.subscribersPerChannel,
      maxP99Ms: 500,
      publishConnections: PUBLISH_CONNECTIONS,
    };
    return {
      variant,
      system: name,
      stop,
      setup,
      redisUrl: system.redis!.url,
      connected,
      idle: {
        servers: ((idleTo.servers - idleFrom.servers) * 1000) / idleSeconds,
        redis: ((idleTo.redis - idleFrom.redis) * 1000) / idleSeconds,
      },
    };
  } catch (error) {
    o.log(`  ${variant}: ERROR ${String(error)}`);
    return { variant, system: name, stop, connected, error: String(error) };
  }
}

/**
 * One measured window of an open case: `LEAD_IN_SECONDS` of load, not recorded (the pair's two
 * loads start together), then `o.seconds` recorded, with Redis' command times.
 */
async function measureWindow(c: OpenCase, o: CostOptions): Promise<CostCase> {
  const result: CostCase = { variant: c.variant, system: c.system, connected: c.connected };
  if (c.idle) result.idle = c.idle;
  if (!c.setup || !c.redisUrl) {
    result.error = c.error ?? 'not started';
    return result;
  }
  const redis = new Redis(c.redisUrl);
  try {
    await step(c.setup, o.rate, LEAD_IN_SECONDS * 1000);
    const before = commandTimes(await redis.info('commandstats'));
    result.step = await step(c.setup, o.rate, o.seconds * 1000);
    const after = commandTimes(await redis.info('commandstats'));
    result.redis = {};
    for (const [command, t] of Object.entries(after)) {
      const calls = t.calls - (before[command]?.calls ?? 0);
      if (calls > 0 && command !== 'info')
        result.redis[command] = { calls, usec: t.usec - (before[command]?.usec ?? 0) };
    }
  } catch (error) {
    result.error = String(error);
  } finally {
    redis.disconnect();
  }
  return result;
}

/**
 * Paired: every variant is measured `o.rounds` times at the same time as the ceiling, both
 * loaded at the fixed rate over the same seconds, each with its own Redis, subscribers and
 * publisher, so the machine's drift (on a shared virtual machine the same work's CPU time moves
 * by a fifth or more within minutes and even seconds) falls on both alike. The ceiling stays up
 * throughout; each variant is started in turn, warmed up together with the ceiling, measured in
 * back-to-back pairs and stopped, so neither side of a pair comes to it from idling (a server
 * that idled for a minute measured a quarter dearer over its next seconds). Each pair is a
 * back-to-back set (`CostRun`: the ceiling's case and the variant's), judged on its own. `o.runs`
 * repeats the whole with fresh systems.
 */
export async function publishCostScenario(
  o: CostOptions & { runs: number; rounds: number },
): Promise<CostRun[]> {
  const pairs: CostRun[] = [];
  const warm = (c: OpenCase): Promise<unknown> =>
    c.setup ? step(c.setup, o.rate, o.warmupSeconds * 1000) : Promise.resolve();
  const others = o.variants.filter((v) => v !== 'ceiling');
  for (let run = 0; run < o.runs; run++) {
    if (o.runs > 1) o.log(`  run ${run + 1} of ${o.runs}`);
    const ceiling = o.variants.includes('ceiling') ? await openCase('ceiling', o) : undefined;
    try {
      // A row is measured with the ceiling when there is one; the ceiling alone, it by itself.
      for (const variant of others.length > 0 ? others : ceiling ? ['ceiling' as const] : []) {
        const c = variant === 'ceiling' && ceiling ? ceiling : await openCase(variant, o);
        const sides = ceiling && c !== ceiling ? [ceiling, c] : [c];
        try {
          // Warm-up at the fixed rate (JIT, Redis connections, every channel's first publish), not recorded.
          await Promise.all(sides.map(warm));
          for (let r = 0; r < o.rounds; r++) {
            const pair: CostRun = { cases: await Promise.all(sides.map((side) => measureWindow(side, o))) };
            pairs.push(pair);
            o.log(
              `  ${variant} ${r + 1} of ${o.rounds}: ${pair.cases.map((one) => caseLine(pair, one)).join('; ')}`,
            );
          }
        } finally {
          if (c !== ceiling) await c.stop();
        }
      }
    } finally {
      await ceiling?.stop();
    }
  }
  return pairs;
}

function caseLine(round: CostRun, c: CostCase): string {
  const s = c.step;
  if (!s) return `${c.variant} ERROR ${c.error ?? ''}`;
  const q = c.variant === 'ceiling' ? undefined : costRatios(round, c.variant);
  return (
    `${c.variant} ${s.serverCpuMsPer1000.toFixed(1)} ms/1,000 (${s.cpu.servers.toFixed(2)} + ${s.cpu.redis.toFixed(2)} s), ` +
    `p99 ${s.p99Ms} ms${q ? ` = ${q.cpu.toFixed(2)}× / ${q.p99.toFixed(2)}×` : ''}` +
    `${s.received < s.expected ? `, ${s.received}/${s.expected} delivered` : ''}${s.pass ? '' : `, FAIL: ${s.why ?? ''}`}`
  );
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
