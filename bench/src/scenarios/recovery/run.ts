import Redis from 'ioredis';
import { Worker } from '../../lib/fleet';
import { nowUs } from '../../lib/payload';
import { HOST, KEY, SECRET, cpuSeconds, startSystem } from '../../lib/procs';
import { ResumeRecorder } from '@switchboard/harness';
import type { ResumeStatus } from '@switchboard/harness';
import { callsBetween, commandCalls } from '../../lib/redis-info';
import type { RecoveryConnectReport } from '../../workers/recovery-client';

/** Issue 12's target: every client has every publication this long after the drain began. */
export const RECOVERY_TARGET_SECONDS = 2;

export interface RecoveryResult {
  clients: number;
  channel: string;
  publications: number;
  connected: number;
  /** From SIGTERM to gateway A until the last client had the last publication it lacked. */
  completeSeconds?: number;
  /** From the last publish's answer to the same moment. */
  afterLastPublishSeconds?: number;
  /** How long the 100 publishes took (paced, through gateway B's REST). */
  publishSeconds: number;
  /** From the first reconnect to the last resumed position frame. */
  resumeSpreadSeconds?: number;
  status?: ResumeStatus;
  /** Offsets of the publications that went out during the drain. */
  first: number;
  last: number;
  /** Redis commands (INFO commandstats, scripts' inner commands included) over the reconnect phase. */
  redisCalls: Record<string, number>;
  /** The same publications with every client connected and nobody reconnecting. */
  baselineCalls: Record<string, number>;
  redisCallsPerClient?: number;
  /** CPU seconds over the reconnect phase: gateway B, Redis, the client processes. */
  cpu?: { gatewayB: number; redis: number; clients: number };
  error?: string;
}

export interface RecoveryOptions {
  clients: number;
  publications: number;
  /** Between two publishes, ms (they go out while gateway A drains). */
  publishIntervalMs: number;
  workers: number;
  timeoutMs: number;
  log: (line: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const total = (calls: Record<string, number>): number => Object.values(calls).reduce((s, n) => s + n, 0);

/**
 * 1,000 opted-in clients on gateway A of 2 gateways + Redis; A is drained (SIGTERM: close 4000)
 * while publications go out through gateway B's REST; the clients resume on B with `since` and
 * `epoch`. Measures how long until every client has every publication, and what the resumes
 * cost Redis.
 */
export async function recoveryScenario(o: RecoveryOptions): Promise<RecoveryResult> {
  const channel = 'recovery';
  const result: RecoveryResult = {
    clients: o.clients,
    channel,
    publications: o.publications,
    connected: 0,
    publishSeconds: 0,
    first: 0,
    last: 0,
    redisCalls: {},
    baselineCalls: {},
  };
  const system = await startSystem('switchboard-redis', { nodes: 2 });
  const [a, b] = system.nodes as [(typeof system.nodes)[0], (typeof system.nodes)[0]];
  const workers = Array.from({ length: o.workers }, () => new Worker('recovery-client.js'));
  const redis = new Redis(system.redis!.url);
  const status = async (first: number, last: number): Promise<ResumeStatus> =>
    ResumeRecorder.merge(
      (
        await Promise.all(
          workers.map((w) => w.request<{ status: ResumeStatus }>({ cmd: 'status', first, last }, 10_000)),
        )
      ).map((r) => r.status),
    );
  const calls = async (): Promise<Record<string, number>> => commandCalls(await redis.info('commandstats'));
  let sent = 0;
  /** Publishes through B, one every `publishIntervalMs`; returns the offsets they were given. */
  const publishAll = async (): Promise<{ first: number; last: number }> => {
    const offsets: number[] = [];
    const started = performance.now();
    const requests: Promise<void>[] = [];
    for (let i = 0; i < o.publications; i++) {
      const due = started + i * o.publishIntervalMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const body = JSON.stringify({ key: KEY, secret: SECRET, channel, message: { n: ++sent } });
      requests.push(
        fetch(`http://${HOST}:${b.port}/api/publish`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).then(async (res) => {
          const answer = (await res.json()) as { success?: boolean; offset?: number };
          if (!res.ok || typeof answer.offset !== 'number')
            throw new Error(`publish answered ${res.status} ${JSON.stringify(answer)}`);
          offsets.push(answer.offset);
        }),
      );
    }
    await Promise.all(requests);
    return { first: Math.min(...offsets), last: Math.max(...offsets) };
  };
  const waitComplete = async (first: number, last: number, deadline: number): Promise<ResumeStatus> => {
    let s = await status(first, last);
    while (s.complete < s.clients && Date.now() < deadline) {
      await sleep(20);
      s = await status(first, last);
    }
    return s;
  };
  try {
    const base = (port: number): string => `ws://${HOST}:${port}/v3/${channel}?api_key=${KEY}&recover=1`;
    const parts: number[] = workers.map(
      (_, i) => Math.floor(o.clients / o.workers) + (i < o.clients % o.workers ? 1 : 0),
    );
    const reports = await Promise.all(
      workers.map((w, i) =>
        w.request<{ report: RecoveryConnectReport }>(
          {
            cmd: 'connect',
            urls: Array.from({ length: parts[i]! }, () => base(a.port)),
            resumeUrls: Array.from({ length: parts[i]! }, () => base(b.port)),
            concurrency: 100,
            timeoutMs: 60_000,
          },
          70_000,
        ),
      ),
    );
    result.connected = reports.reduce((s, r) => s + r.report.ok, 0);
    const firstError = reports.find((r) => r.report.firstError)?.report.firstError;
    o.log(
      `  ${result.connected}/${o.clients} opted-in clients on gateway A${firstError ? ` (${firstError})` : ''}`,
    );
    if (result.connected < o.clients) throw new Error(`only ${result.connected}/${o.clients} connected`);

    // Baseline: the same publications with every client connected, nobody reconnecting.
    const before0 = await calls();
    const warm = await publishAll();
    const warmStatus = await waitComplete(warm.first, warm.last, Date.now() + o.timeoutMs);
    result.baselineCalls = callsBetween(before0, await calls());
    if (warmStatus.complete < warmStatus.clients)
      throw new Error(
        `live: only ${warmStatus.complete}/${warmStatus.clients} clients got every publication`,
      );
    o.log(`  live: ${o.publications} publications reached every client (offsets ${warm.first}-${warm.last})`);

    // The drain: A closes every socket with 4000; the publications go out through B meanwhile.
    const before = await calls();
    const clientCpu = (): number => workers.reduce((sum, w) => sum + cpuSeconds(w.pid), 0);
    const cpuBefore = {
      b: cpuSeconds(b.pid),
      redis: system.redisPid ? cpuSeconds(system.redisPid) : 0,
      clients: clientCpu(),
    };
    const t0 = nowUs();
    a.child.kill('SIGTERM');
    const drained = await publishAll();
    result.publishSeconds = (nowUs() - t0) / 1e6;
    const lastAnswerUs = nowUs();
    result.first = drained.first;
    result.last = drained.last;
    const s = await waitComplete(drained.first, drained.last, Date.now() + o.timeoutMs);
    result.redisCalls = callsBetween(before, await calls());
    result.cpu = {
      gatewayB: cpuSeconds(b.pid) - cpuBefore.b,
      redis: system.redisPid ? cpuSeconds(system.redisPid) - cpuBefore.redis : 0,
      clients: clientCpu() - cpuBefore.clients,
    };
    result.status = s;
    if (s.complete === s.clients) {
      result.completeSeconds = (s.lastArrivalUs - t0) / 1e6;
      result.afterLastPublishSeconds = Math.max(0, (s.lastArrivalUs - lastAnswerUs) / 1e6);
    }
    if (s.firstReconnectUs) result.resumeSpreadSeconds = (s.lastResumedUs - s.firstReconnectUs) / 1e6;
    result.redisCallsPerClient = (total(result.redisCalls) - total(result.baselineCalls)) / o.clients;
    o.log(
      `  drain: ${s.complete}/${s.clients} clients had offsets ${drained.first}-${drained.last}` +
        (result.completeSeconds !== undefined
          ? ` ${result.completeSeconds.toFixed(2)} s after SIGTERM`
          : ` (not all within ${o.timeoutMs} ms)`) +
        `; ${s.reconnects} reconnects, recovered ${s.recovered}, not recovered ${s.unrecovered}, duplicates ${s.duplicates}, out of order ${s.outOfOrder}` +
        `; Redis commands ${total(result.redisCalls)} (${total(result.baselineCalls)} for the same publications without reconnects): ${result.redisCallsPerClient.toFixed(1)} per client`,
    );
  } catch (error) {
    result.error = String(error);
    o.log(`  ERROR ${result.error}`);
  } finally {
    await Promise.all(workers.map((w) => w.request({ cmd: 'close' }, 10_000).catch(() => undefined)));
    for (const w of workers) w.kill();
    redis.disconnect();
    await system.stop();
  }
  return result;
}
