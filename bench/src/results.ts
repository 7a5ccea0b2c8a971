// The shapes of a benchmark run's results (bench/results/*.json): what run.ts writes and report.ts
// reads, so neither imports the other.

import type { Machine } from './lib/machine';
import type { SystemName } from './lib/procs';
import type { ConnectCostRun } from './scenarios/connect-cost/run';
import type { MemoryCase } from './scenarios/memory/run';
import type { PresenceResult } from './scenarios/presence/run';
import type { PusherResults } from './scenarios/pusher/run';
import type { ProfileResult } from './scenarios/profile/run';
import type { CostRun, CostVariant } from './scenarios/publish-cost/run';
import type { RecoveryResult } from './scenarios/recovery/run';
import type { ScaleResult } from './scenarios/scale/run';
import type { ThroughputCase } from './scenarios/throughput/run';

export interface Meta {
  command: string;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  machine: Machine;
  loadAverageAtEnd: number[];
  productCommit: string;
  productDir: string;
  options: Options;
  /** The servers' Node.js when it is not this process's (`--runtime`). */
  serverNode?: string;
}

export interface ThroughputShape {
  label: string;
  channels: number;
  subscribersPerChannel: number;
  /** Every system, every run; `median` is the run with the median maximum. */
  runs: Partial<Record<SystemName, ThroughputCase[]>>;
  median: Partial<Record<SystemName, ThroughputCase>>;
}

export interface Results {
  /**
   * Fan-out and many channels with the servers on another Node.js (`--runtime node24`), keyed by
   * runtime; docs/benchmarks.md sets them beside this file's own (Node.js of the machine) rows.
   */
  runtimes?: Record<
    string,
    {
      fanout?: { meta: Meta; shapes: ThroughputShape[] };
      channels?: { meta: Meta; shapes: ThroughputShape[] };
    }
  >;
  fanout?: { meta: Meta; shapes: ThroughputShape[] };
  channels?: { meta: Meta; shapes: ThroughputShape[] };
  presence?: { meta: Meta; runs: PresenceResult[]; median: PresenceResult };
  memory?: { meta: Meta; cases: MemoryCase[] };
  profile?: { meta: Meta; result: ProfileResult };
  'publish-cost'?: {
    meta: Meta;
    channels: number;
    subscribersPerChannel: number;
    rate: number;
    seconds: number;
    /** Absent in results from before it was recorded (then 3 s). */
    warmupSeconds?: number;
    /**
     * Pairs per variant of the paired measurement: `runs` then holds one entry per pair, the
     * ceiling's case and one variant's measured over the same `seconds`.
     * Absent in results from before pairs (then each entry is a run of its own: the variants one
     * after the other, each measured for `seconds`).
     */
    rounds?: number;
    runs: CostRun[];
  };
  recovery?: { meta: Meta; runs: RecoveryResult[]; median: RecoveryResult };
  scale?: { meta: Meta; result: ScaleResult };
  'connect-cost'?: { meta: Meta; connections: number; runs: ConnectCostRun[]; median?: ConnectCostRun };
  pusher?: { meta: Meta } & PusherResults;
}

export interface Options {
  scenarios: string[];
  durationS: number;
  stepS: number;
  refine: number;
  runs: number;
  sizes: number[];
  channels: number;
  idle: number;
  presencePerNode: number;
  members: number;
  workers: number;
  maxP99Ms: number;
  systems: SystemName[];
  profileRate: number;
  profileSeconds: number;
  /** publish-cost: publishes per second, seconds measured. */
  costRate: number;
  costSeconds: number;
  /** publish-cost: seconds at the same rate before the measurement (JIT, connections, first publishes). */
  costWarmupSeconds: number;
  costRounds: number;
  costVariants: CostVariant[];
  /** publish-cost: Node flags for the server processes (to profile them). */
  costNodeFlags?: string;
  recoveryClients: number;
  recoveryPublications: number;
  /** scale: sockets in all, the servers they are spread over, publishes timed. */
  scaleConnections: number;
  scaleNodes: number;
  scalePublishes: number;
  /** connect-cost: plain V3 connections opened and closed per system and run. */
  connectConnections: number;
  docs: boolean;
  /** Tiny sizes for trying the harness: results go to bench/results/tmp, docs are left alone. */
  quick: boolean;
  client: 'raw' | 'ws';
  /** `node22`, `node24`: the servers on that Node.js in a Debian 13 root (fan-out and channels only). */
  runtime?: string;
  /** pusher: the systems measured (the Redis-hop ceiling, Soketi, Switchboard over Pusher). */
  pusherSystems?: SystemName[];
  /** pusher: presence joins per system and run (0: none). */
  pusherPresence: number;
  /** Pusher scenario: most publishes one request carries (`batch_events`; 1 = one per request). */
  pusherBatch?: number;
}

/** One row of the report's verdict table: a target, what was measured, whether it was met. */
export interface Target {
  name: string;
  goal: string;
  measured: string;
  met: boolean | undefined;
  gap: string;
}
