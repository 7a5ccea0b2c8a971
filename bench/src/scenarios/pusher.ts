import { loadavg } from 'node:os';
import type { SystemName } from '../lib/procs';
import { TARGET_SHARE, throughputCase } from './throughput';
import type { ThroughputCase } from './throughput';

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

export const PUSHER_SYSTEMS: SystemName[] = ['ceiling-redis', 'soketi', 'switchboard-pusher'];

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
  log: (line: string) => void;
}

const load = (): number[] => loadavg().map((l) => Math.round(l * 100) / 100);

function medianCase(runs: PusherCase[]): PusherCase {
  const sorted = [...runs].sort(
    (a, b) => (a.max?.deliveriesPerSecond ?? 0) - (b.max?.deliveriesPerSecond ?? 0),
  );
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export async function pusherScenario(o: PusherOptions): Promise<PusherShape[]> {
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
        const ceiling = system === 'switchboard-pusher' ? result.runs['ceiling-redis']?.[run] : undefined;
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
  return out;
}
