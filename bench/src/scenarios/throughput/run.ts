import { ClientFleet, Publisher, fleetDefaults } from '../../lib/fleet';
import type { ConnectSummary } from '../../lib/fleet';
import { KEY, isPusherSystem, startSystem } from '../../lib/procs';
import type { SystemName } from '../../lib/procs';
import { confirmedStep, searchMax, step, subscriberUrls } from '../load';
import type { LoadSetup, Step } from '../load';

/** Fan-out and many channels: one system, one shape (channels × subscribers), the full set of measurements. */
export interface ThroughputCase {
  system: SystemName;
  nodes: number;
  channels: number;
  subscribersPerChannel: number;
  connect: ConnectSummary;
  search: Step[];
  /** The highest rate that passed the search and a measurement of the full duration. */
  max?: Step;
  /** The full-duration measurements that found `max`, highest rate first. */
  held?: Step[];
  /** Half the maximum rate (latency). */
  half?: Step;
  /** The fixed rate (same for every system). */
  fixed?: Step;
  /** Switchboard at its ceiling's half-max rate, so latencies compare at the same load. */
  sameRate?: Step;
  /** Switchboard at the target share of its ceiling's sustained maximum (issue 6), full duration. */
  atTarget?: Step;
  error?: string;
}

export interface ThroughputOptions {
  system: SystemName;
  nodes: number;
  channels: number;
  subscribersPerChannel: number;
  channelPrefix: string;
  workers: number;
  fixedDeliveries: number;
  startDeliveries: number;
  sameRate?: number;
  /** Rate to hold for the full duration: the target share of the ceiling's maximum. */
  targetRate?: number;
  durationMs: number;
  stepMs: number;
  refine: number;
  maxP99Ms: number;
  nodeOptions?: string;
  /** Most publishes one request carries (the Pusher scenario batches; default 1). */
  publishBatch?: number;
  log: (line: string) => void;
}

/**
 * Publisher connections per node (one request in flight each). Enough that the limit is the
 * server's capacity, not the publish round trip (Little's law: rate ≤ connections / latency).
 */
export const PUBLISH_CONNECTIONS = 64;

/** Issue 6's throughput targets: the share of the ceiling's deliveries per second Switchboard must reach. */
export const TARGET_SHARE = { fanout: 0.85, channels: 0.7 } as const;

/** Below a maximum that does not hold, rates are tried in steps of 1/8 of it, down to half. */
const STEP_DOWN = [1, 7 / 8, 6 / 8, 5 / 8, 4 / 8];

/**
 * The reported maximum: the highest rate at or below the search's best that also passes a
 * measurement of the full duration (a queue that grows slowly can pass a short search step).
 * Steps down by an eighth of the best rate (about the search's resolution) until one holds; if
 * none down to half of it does, the last attempt is returned, marked failed.
 */
export async function sustainedMax(
  measure: (rate: number) => Promise<Step>,
  best: number,
  log: (line: string) => void,
): Promise<{ max: Step; tried: Step[] }> {
  const tried: Step[] = [];
  for (const fraction of STEP_DOWN) {
    const rate = Math.max(1, Math.round(best * fraction));
    if (tried.some((s) => s.rate === rate)) continue;
    const s = await confirmedStep(() => measure(rate));
    tried.push(s);
    if (s.pass) break;
    log(`    ${rate} pub/s does not hold for the full duration: ${s.why ?? ''}`);
  }
  return { max: tried[tried.length - 1]!, tried };
}

export async function throughputCase(o: ThroughputOptions): Promise<ThroughputCase> {
  const system = await startSystem(o.system, {
    nodes: o.nodes,
    ...(o.nodeOptions ? { nodeOptions: o.nodeOptions } : {}),
  });
  const pusher = isPusherSystem(o.system);
  const fleet = new ClientFleet(o.workers, fleetDefaults.client, pusher ? 'pusher-client.js' : 'client.js');
  const publisher = new Publisher();
  const channels = Array.from({ length: o.channels }, (_, i) => `${o.channelPrefix}-${i}`);
  const result: ThroughputCase = {
    system: o.system,
    nodes: o.nodes,
    channels: o.channels,
    subscribersPerChannel: o.subscribersPerChannel,
    connect: { ok: 0, failed: 0, openSeconds: 0, joinSeconds: 0, joined: 0 },
    search: [],
  };
  try {
    const urls = subscriberUrls(system, channels, o.subscribersPerChannel);
    // Pusher subscribers wait at most 10 s each for the handshake and subscription, and a client
    // process stops at its first failure: a server that does not speak Pusher fails in seconds.
    result.connect = await fleet.connect(urls, { concurrency: 200 });
    o.log(
      `  ${o.system}: ${result.connect.ok}/${urls.length} connected in ${result.connect.openSeconds.toFixed(1)} s` +
        (result.connect.firstError ? ` (${result.connect.firstError})` : ''),
    );
    if (pusher && result.connect.ok === 0)
      throw new Error(
        `no Pusher client could subscribe on ${o.system} (ws://…/app/${KEY}?protocol=7): ${result.connect.firstError ?? 'no reason given'}`,
      );
    if (result.connect.ok < urls.length)
      throw new Error(`only ${result.connect.ok}/${urls.length} connected`);
    const setup: LoadSetup = {
      system,
      fleet,
      publisher,
      channels,
      subscribersPerChannel: o.subscribersPerChannel,
      maxP99Ms: o.maxP99Ms,
      publishConnections: PUBLISH_CONNECTIONS,
      ...(o.publishBatch ? { publishBatch: o.publishBatch } : {}),
    };
    const perPublish = o.subscribersPerChannel;
    // Warm-up (JIT, Redis connections), not recorded.
    await step(setup, Math.max(1, Math.round(o.fixedDeliveries / perPublish / 4)), 300);
    const found = await searchMax(setup, {
      startRate: Math.max(1, Math.round(o.startDeliveries / perPublish)),
      stepMs: o.stepMs,
      refine: o.refine,
      maxSteps: 8,
      log: o.log,
    });
    result.search = found.steps;
    if (found.best) {
      const held = await sustainedMax((rate) => step(setup, rate, o.durationMs), found.best.rate, o.log);
      result.max = held.max;
      result.held = held.tried;
      o.log(
        `  max ${result.max.rate} pub/s ${result.max.pass ? 'sustained' : `NOT sustained (${result.max.why ?? ''})`}: ${Math.round(result.max.deliveriesPerSecond)} deliveries/s, loss ${result.max.loss}, p99 ${result.max.p99Ms} ms`,
      );
      result.half = await step(setup, Math.max(1, Math.round(result.max.rate / 2)), o.durationMs);
      o.log(`  half: p50 ${result.half.p50Ms} / p95 ${result.half.p95Ms} / p99 ${result.half.p99Ms} ms`);
    }
    result.fixed = await step(setup, Math.max(1, Math.round(o.fixedDeliveries / perPublish)), o.durationMs);
    o.log(
      `  fixed ${o.fixedDeliveries}/s: p50 ${result.fixed.p50Ms} / p99 ${result.fixed.p99Ms} ms, loss ${result.fixed.loss}`,
    );
    if (o.targetRate) {
      const rate = o.targetRate;
      result.atTarget = await confirmedStep(() => step(setup, rate, o.durationMs));
      o.log(
        `  at the target share of the ceiling's maximum, ${rate} pub/s: ${result.atTarget.pass ? 'held' : `not held (${result.atTarget.why ?? ''})`}`,
      );
    }
    if (o.sameRate) {
      result.sameRate = await step(setup, o.sameRate, o.durationMs);
      o.log(`  at ${o.sameRate} pub/s: p50 ${result.sameRate.p50Ms} / p99 ${result.sameRate.p99Ms} ms`);
    }
  } catch (error) {
    result.error = String(error);
    o.log(`  ERROR ${result.error}`);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    publisher.stop();
    await system.stop();
  }
  return result;
}
