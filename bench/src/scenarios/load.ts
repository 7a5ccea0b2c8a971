import type { ClientFleet, Publisher } from '../lib/fleet';
import { KEY, SECRET, HOST, cpuSeconds } from '../lib/procs';
import type { System } from '../lib/procs';

/** One fixed-rate measurement: publish for a while, let deliveries settle, count and time them. */
export interface Step {
  /** Publishes per second asked for, and achieved. */
  rate: number;
  publishRate: number;
  deliveriesPerSecond: number;
  expected: number;
  received: number;
  /** Fraction of expected deliveries that never arrived (0 = none lost). */
  loss: number;
  publishFailed: number;
  /** HTTP requests the publisher sent (fewer than the publishes when they were batched). */
  publishRequests?: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Median latency of the first and the last quarter of the publishes: a growing queue shows here. */
  earlyP50Ms: number;
  lateP50Ms: number;
  /** CPU seconds used during the step (publishing and settling) by each group of processes. */
  cpu: { servers: number; redis: number; clients: number; publisher: number; wallSeconds: number };
  /** Server CPU (gateways or ceiling servers, plus Redis) per 1,000 deliveries, in ms. */
  serverCpuMsPer1000: number;
  pass: boolean;
  why?: string;
}

export interface LoadSetup {
  system: System;
  fleet: ClientFleet;
  publisher: Publisher;
  channels: string[];
  subscribersPerChannel: number;
  /** Pass criteria: latency p99 bound (latency "blowing up" = queues building). */
  maxP99Ms: number;
  publishConnections: number;
  /** Most publishes one request carries (bench/src/lib/publish-loop.ts; default 1). */
  publishBatch?: number;
}

/** A step fails when the publisher reaches less than this share of the asked rate. */
export const MIN_PUBLISH_SHARE = 0.95;

/** A step fails when the last quarter's median latency exceeds twice the first quarter's plus this. */
export const GROWTH_SLACK_MS = 20;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Subscriber URLs: channel c's subscriber j on node (c·subs + j) mod nodes, so every channel spans nodes. */
export function subscriberUrls(system: System, channels: string[], perChannel: number): string[] {
  const urls: string[] = [];
  channels.forEach((channel, c) => {
    for (let j = 0; j < perChannel; j++) urls.push(system.wsUrl(c * perChannel + j, 'v3', channel));
  });
  return urls;
}

/**
 * A step's loss, naming the subscriber sockets the server closed (`down`): their publications
 * were lost to a visible close, not silently.
 */
export function lossReason(loss: number, down: number): string {
  const closed = down > 0 ? ` (${down} subscriber sockets were closed by the server)` : '';
  return `loss ${(loss * 100).toFixed(3)}%${closed}`;
}

export async function step(setup: LoadSetup, rate: number, durationMs: number): Promise<Step> {
  const { fleet, publisher, system } = setup;
  await fleet.reset(Math.round((rate * durationMs) / 1000));
  const sample = (): { servers: number; redis: number; clients: number; publisher: number; at: number } => ({
    servers: system.nodes.reduce((sum, n) => sum + cpuSeconds(n.pid), 0),
    redis: system.redisPid ? cpuSeconds(system.redisPid) : 0,
    clients: fleet.pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0),
    publisher: cpuSeconds(publisher.pid),
    at: performance.now(),
  });
  const before = sample();
  const result = await publisher.run({
    targets: system.nodes.map((n) => ({ host: HOST, port: n.port })),
    path: system.publishPath('v3'),
    key: KEY,
    secret: SECRET,
    channels: setup.channels,
    rate,
    durationMs,
    stopAfterMs: Math.ceil(durationMs / MIN_PUBLISH_SHARE),
    connections: setup.publishConnections,
    ...(setup.publishBatch && setup.publishBatch > 1 ? { batch: setup.publishBatch } : {}),
    ...(system.publishFormat ? { format: system.publishFormat } : {}),
  });
  const expected = result.ok * setup.subscribersPerChannel;
  let stats = await fleet.stats();
  let lastProgress = Date.now();
  const deadline = Date.now() + 5000;
  while (stats.received < expected && Date.now() < deadline && Date.now() - lastProgress < 1000) {
    await sleep(100);
    const next = await fleet.stats();
    if (next.received > stats.received) lastProgress = Date.now();
    stats = next;
  }
  const after = sample();
  const cpu = {
    servers: after.servers - before.servers,
    redis: after.redis - before.redis,
    clients: after.clients - before.clients,
    publisher: after.publisher - before.publisher,
    wallSeconds: (after.at - before.at) / 1000,
  };
  const loss = expected > 0 ? Math.max(0, 1 - stats.received / expected) : 0;
  const reasons: string[] = [];
  if (loss > 0) reasons.push(lossReason(loss, stats.down));
  if (result.failed > 0)
    reasons.push(
      `${result.failed} publishes failed${result.firstError ? ` (${result.firstError.slice(0, 80)})` : ''}`,
    );
  if (result.achievedRate < rate * MIN_PUBLISH_SHARE)
    reasons.push(`publisher reached ${result.achievedRate.toFixed(0)}/s`);
  if (stats.p99Ms > setup.maxP99Ms) reasons.push(`p99 ${stats.p99Ms.toFixed(1)} ms > ${setup.maxP99Ms} ms`);
  if (stats.late.p50Ms > 2 * stats.early.p50Ms + GROWTH_SLACK_MS)
    reasons.push(`latency grew: p50 ${stats.early.p50Ms.toFixed(1)} → ${stats.late.p50Ms.toFixed(1)} ms`);
  return {
    rate,
    publishRate: result.achievedRate,
    deliveriesPerSecond: (stats.received * 1000) / Math.max(result.elapsedMs, durationMs),
    expected,
    received: stats.received,
    loss,
    publishFailed: result.failed,
    ...(result.requests !== result.sent ? { publishRequests: result.requests } : {}),
    p50Ms: stats.p50Ms,
    p95Ms: stats.p95Ms,
    p99Ms: stats.p99Ms,
    maxMs: stats.maxMs,
    earlyP50Ms: stats.early.p50Ms,
    lateP50Ms: stats.late.p50Ms,
    cpu,
    serverCpuMsPer1000: stats.received > 0 ? ((cpu.servers + cpu.redis) * 1e6) / stats.received : 0,
    pass: reasons.length === 0,
    ...(reasons.length ? { why: reasons.join('; ') } : {}),
  };
}

export interface SearchOptions {
  startRate: number;
  stepMs: number;
  refine: number;
  maxSteps: number;
  log: (line: string) => void;
}

/**
 * A failed measurement is taken once more and the second verdict stands: one burst from another
 * process sharing the cores must neither cap a search nor sink (or flatter) a reported maximum.
 */
export async function confirmedStep(measure: () => Promise<Step>): Promise<Step> {
  const first = await measure();
  return first.pass ? first : measure();
}

/** Highest passing rate: double (or halve) from `startRate` until the verdict flips, then bisect. */
export async function searchMax(
  setup: LoadSetup,
  options: SearchOptions,
): Promise<{ best?: Step; steps: Step[] }> {
  const steps: Step[] = [];
  let good: Step | undefined;
  let bad: number | undefined;
  let rate = options.startRate;
  const run = async (r: number): Promise<Step> => {
    const s = await step(setup, Math.max(1, Math.round(r)), options.stepMs);
    steps.push(s);
    options.log(
      `    ${String(s.rate).padStart(6)} pub/s → ${Math.round(s.deliveriesPerSecond).toLocaleString('en-US').padStart(9)} deliveries/s, p99 ${s.p99Ms.toFixed(1)} ms, server CPU ${s.serverCpuMsPer1000.toFixed(2)} ms/1k, publisher ${Math.round((100 * s.cpu.publisher) / Math.max(s.cpu.wallSeconds, 1e-9))}% CPU${s.publishRequests === undefined ? '' : ` in ${s.publishRequests} requests`} ${s.pass ? 'ok' : `FAIL: ${s.why}`}`,
    );
    return s;
  };
  const confirmed = (r: number): Promise<Step> => confirmedStep(() => run(r));
  for (let i = 0; i < options.maxSteps; i++) {
    const s = await confirmed(rate);
    if (s.pass) {
      good = s;
      if (bad !== undefined) break;
      rate *= 2;
    } else {
      bad = s.rate;
      if (good) break;
      rate /= 2;
      if (rate < 1) break;
    }
  }
  if (good && bad !== undefined) {
    for (let i = 0; i < options.refine; i++) {
      const mid = Math.round((good.rate + bad) / 2);
      if (mid <= good.rate || mid >= bad) break;
      const s = await confirmed(mid);
      if (s.pass) good = s;
      else bad = mid;
    }
  }
  return { ...(good ? { best: good } : {}), steps };
}
