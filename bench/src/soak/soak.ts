import Redis from 'ioredis';
import { freePort, startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { KeepAliveConnection, postRequest } from '../lib/http';
import {
  HOST,
  KEY,
  REDIS_PREFIX,
  SECRET,
  cliPath,
  cpuSeconds,
  gatewayEnv,
  productNodeFlags,
  rssKiB,
  startNode,
} from '../lib/procs';
import type { ServerProcess } from '../lib/procs';
import { openProductEngine } from '../lib/product';
import { ChurnFleet } from './fleet';
import type { Conn, ConnSpec, FleetCounters } from './fleet';
import { metricValue, scrape } from './metrics';
import { countsDrift, heapRule, heapVerdict, soakVerdict } from './verdict';
import type { CheckpointResult, CountsView, HeapVerdict, NodeSample, SoakVerdict } from './verdict';

/** The second API key: its sockets are all closed at once by `POST /api/kick` now and then. */
export const KICK_KEY = 'benchkick';

export interface SoakOptions {
  durationS: number;
  /** Sockets held open throughout (the kick key's included). */
  connections: number;
  /** Sockets closed, and as many opened, per second. */
  churn: number;
  /** REST publishes per second, over both gateways and protocols. */
  publishRate: number;
  /** Channels of the main key the sockets and publishes spread over. */
  channels: number;
  /** Of `connections`, how many use the kick key. */
  kickKeyConnections: number;
  /** Seconds between `POST /api/kick` on the kick key, and between `/api/v4/kick` of one user. */
  keyKickEveryS: number;
  userKickEveryS: number;
  /** How long after a kick every socket it matched must be closed. */
  kickCheckMs: number;
  sampleS: number;
  checkpointS: number;
  /** How long a checkpoint waits for the cluster to agree with the sockets. */
  settleTimeoutS: number;
  /** Opens per second while filling up to `connections` (and refilling after a kick), and the most in flight at once. */
  rampRate: number;
  workers: number;
  maxGrowth: number;
  seed: number;
  log: (line: string) => void;
}

export const DEFAULT_SOAK: Omit<SoakOptions, 'log'> = {
  durationS: 600,
  connections: 20_000,
  churn: 200,
  publishRate: 200,
  channels: 1000,
  kickKeyConnections: 200,
  keyKickEveryS: 60,
  userKickEveryS: 15,
  kickCheckMs: 5000,
  sampleS: 10,
  checkpointS: 120,
  settleTimeoutS: 30,
  rampRate: 1000,
  workers: 2,
  maxGrowth: 0.1,
  seed: 1,
};

export interface RedisSample {
  t: number;
  usedMemoryBytes: number;
  keys: number;
  cpuSeconds: number;
}

export interface FleetSample {
  t: number;
  open: number;
  opening: number;
  framesReceived: number;
  bytesReceived: number;
  pingsAnswered: number;
}

export interface SoakResult {
  options: Omit<SoakOptions, 'log'>;
  nodes: { nodeId: string; samples: NodeSample[] }[];
  redis: RedisSample[];
  fleet: FleetSample[];
  checkpoints: (CheckpointResult & { label: string })[];
  counters: FleetCounters;
  kicks: {
    keyKicks: number;
    userKicks: number;
    kickedSockets: number;
    lateKicked: number;
    wrong: number;
    missed: number;
  };
  publishes: { sent: number; failed: number; skipped: number; firstError?: string };
  leftovers: string[];
  heap: HeapVerdict[];
  unexpectedCloses: Record<string, number>;
  /** Opens that succeeded and failed after warm-up (what the verdict judges). */
  opensAfterWarmup: { opened: number; failed: number };
  /** Error-level lines the gateways logged. */
  gatewayErrors: string[];
  /** Each close the run did not cause (the first 100): when, which socket, how old. */
  unexpectedDetails: UnexpectedClose[];
  /** Per gateway, `switchboard_closes_total` by close code at the end (before the final close-all). */
  serverCloses: Record<string, number>[];
  verdict: SoakVerdict;
}

export interface UnexpectedClose {
  t: number;
  code: number;
  node: number;
  protocol: 'v3' | 'v4';
  key: string;
  channel: string;
  user?: string;
  ageS: number;
}

/** mulberry32: a seeded generator, so a run's mix of sockets is reproducible. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The slice of the product's engine the soak reads counts and presence through. */
interface Engine {
  counts: {
    list(
      key: string,
      offset?: number,
      limit?: number,
    ): Promise<{ items: { channel: string; count: number }[] }>;
    sum(key: string): Promise<number>;
  };
  presence: {
    roster(topic: Topic, limit: number): Promise<{ total: number }>;
    identities(topic: Topic, offset: number, limit: number): Promise<{ count: number }>;
  };
  close(): Promise<void>;
}

interface Topic {
  key: string;
  protocol: 'v3' | 'v4';
  channel: string;
}

/** What the sockets the load generator holds imply the cluster should report. */
export function expectedView(open: readonly ConnSpec[], nodes: number, keys: readonly string[]): CountsView {
  const view: CountsView = {
    channels: {},
    sums: {},
    presence: {},
    nodes: Array.from({ length: nodes }, () => 0),
  };
  for (const key of keys) view.sums[key] = 0;
  const identities = new Map<string, Set<string>>();
  for (const c of open) {
    view.sums[c.key] = (view.sums[c.key] ?? 0) + 1;
    const channel = `${c.key}|${c.channel}`;
    view.channels[channel] = (view.channels[channel] ?? 0) + 1;
    view.nodes[c.node] = (view.nodes[c.node] ?? 0) + 1;
    if (c.user === undefined) continue;
    const topic = `${c.key}|${c.protocol}|${c.channel}`;
    if (c.protocol === 'v3') view.presence[topic] = (view.presence[topic] ?? 0) + 1;
    else identities.set(topic, (identities.get(topic) ?? new Set()).add(c.user));
  }
  for (const [topic, users] of identities) view.presence[topic] = users.size;
  return view;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const { log } = o;
  const random = rng(o.seed);
  const redis: RedisServer = await startRedis();
  const nodes: ServerProcess[] = [];
  const metricsPorts: number[] = [];
  const nodeIds = ['soak-1', 'soak-2'];
  const keys = JSON.stringify([
    { key: KEY, secret: SECRET },
    { key: KICK_KEY, secret: SECRET },
  ]);
  let engine: Engine | undefined;
  let fleet: ChurnFleet | undefined;
  const publishers: KeepAliveConnection[] = [];
  const redisClient = new Redis({ host: HOST, port: redis.port, lazyConnect: true });
  try {
    for (const nodeId of nodeIds) {
      const metricsPort = await freePort();
      metricsPorts.push(metricsPort);
      nodes.push(
        await startNode(
          [cliPath(), 'gateway'],
          {
            ...gatewayEnv(nodeId, redis.url),
            SWITCHBOARD_KEYS: keys,
            METRICS_PORT: String(metricsPort),
            LOG_LEVEL: 'error',
          },
          { healthPath: '/api/health', nodeOptions: productNodeFlags().join(' ') },
        ),
      );
    }
    await redisClient.connect();
    const redisPid = Number(/process_id:(\d+)/.exec(await redisClient.info('server'))?.[1] ?? 0);
    engine = await openProductEngine<Engine>({
      REDIS_URL: redis.url,
      REDIS_PREFIX,
      NODE_ID: 'soak-observer',
    });
    const observer = engine;
    fleet = new ChurnFleet(
      o.workers,
      nodes.map((n) => n.port),
    );
    const sockets = fleet;
    for (const node of nodes) {
      for (let i = 0; i < 32; i++) {
        const connection = new KeepAliveConnection(HOST, node.port);
        await connection.open();
        publishers.push(connection);
      }
    }

    // The mix: on the main key 30 % V3 and 30 % V4 without presence, 20 % V3 and 20 % V4 with a
    // presence identity drawn from a pool of about one user per 1.5 presence sockets (so some
    // users have two tabs: V4 counts them once); the kick key's sockets are half presence too.
    const mainTarget = o.connections - o.kickKeyConnections;
    const users = Math.max(1, Math.round((mainTarget * 0.4) / 1.5));
    let serial = 0;
    const specFor = (key: string): ConnSpec => {
      const node = serial++ % nodes.length;
      if (key === KICK_KEY) {
        const r = random();
        return {
          key,
          node,
          protocol: r < 0.5 ? 'v3' : 'v4',
          channel: `kick-${Math.floor(random() * 10)}`,
          ...(r < 0.25 || r > 0.75 ? { user: `k${Math.floor(random() * 100)}` } : {}),
        };
      }
      const r = random();
      const channel = `soak-${Math.floor(random() * o.channels)}`;
      const user = `u${Math.floor(random() * users)}`;
      if (r < 0.3) return { key, node, protocol: 'v3', channel };
      if (r < 0.6) return { key, node, protocol: 'v4', channel };
      if (r < 0.8) return { key, node, protocol: 'v3', channel, user };
      return { key, node, protocol: 'v4', channel, user };
    };
    const kicks: { at: number; key: string; user?: string }[] = [];
    const kickStats = { keyKicks: 0, userKicks: 0, kickedSockets: 0, lateKicked: 0, wrong: 0, missed: 0 };
    const unexpectedCloses: Record<string, number> = {};
    const unexpectedDetails: UnexpectedClose[] = [];
    const matches = (c: Conn, k: { key: string; user?: string }): boolean =>
      c.key === k.key && (k.user === undefined || (c.protocol === 'v4' && c.user === k.user));
    sockets.onGone = (conn, code) => {
      if (code !== 4509) {
        unexpectedCloses[String(code)] = (unexpectedCloses[String(code)] ?? 0) + 1;
        if (unexpectedDetails.length < 100)
          unexpectedDetails.push({
            t: Math.round(elapsed() * 10) / 10,
            code,
            node: conn.node,
            protocol: conn.protocol,
            key: conn.key,
            channel: conn.channel,
            ...(conn.user !== undefined ? { user: conn.user } : {}),
            ageS: conn.openedAt ? Math.round((Date.now() - conn.openedAt) / 100) / 10 : 0,
          });
        return;
      }
      if (conn.kickedAt !== undefined) kickStats.kickedSockets++;
      // Opened while the kick was on its way: the node had it before the kick arrived.
      else if (kicks.some((k) => Date.now() - k.at < 10_000 && matches(conn, k))) kickStats.lateKicked++;
      else kickStats.wrong++;
    };

    const publish = { sent: 0, failed: 0, skipped: 0, firstError: undefined as string | undefined };
    let publishIndex = 0;
    const publishOne = (): void => {
      const connection = publishers.find((p) => !p.busy && p.alive);
      if (!connection) {
        publish.skipped++;
        return;
      }
      const v4 = publishIndex++ % 2 === 0;
      const body = JSON.stringify({
        key: KEY,
        secret: SECRET,
        channel: `soak-${Math.floor(random() * o.channels)}`,
        message: { event: 'soak', data: { n: publishIndex, at: Date.now() } },
      });
      publish.sent++;
      connection.send(
        postRequest(HOST, connection.port, v4 ? '/api/v4/publish' : '/api/publish', body),
        (result) => {
          if (result instanceof Error || result.status !== 200) {
            publish.failed++;
            publish.firstError ??=
              result instanceof Error ? result.message : `${result.status} ${result.body}`;
          }
        },
      );
    };
    // Rotate so both nodes publish.
    const rotate = (): void => {
      publishers.push(publishers.shift()!);
    };

    let paused = false;
    const carry = { close: 0, publish: 0 };
    const tickMs = 100;
    const openCap = Math.max((o.churn * tickMs) / 1000, (o.rampRate * tickMs) / 1000);
    const tick = (): void => {
      if (paused) return;
      carry.close += (o.churn * tickMs) / 1000;
      carry.publish += (o.publishRate * tickMs) / 1000;
      for (; carry.close >= 1; carry.close--) {
        const conn = sockets.pick(random);
        if (conn) sockets.close(conn);
      }
      let budget = Math.ceil(openCap + (o.churn * tickMs) / 1000);
      for (const [key, target] of [
        [KICK_KEY, o.kickKeyConnections],
        [KEY, mainTarget],
      ] as const) {
        // Opens in flight are capped: a gateway short of CPU answers late, and piling more
        // handshakes on it only makes them time out.
        while (sockets.held(key) < target && budget > 0 && sockets.opening < o.rampRate) {
          sockets.open(specFor(key));
          budget--;
        }
      }
      for (; carry.publish >= 1; carry.publish--) {
        publishOne();
        rotate();
      }
    };

    const sendKick = async (
      body: Record<string, unknown>,
      path: string,
      selector: { key: string; user?: string },
    ) => {
      const at = Date.now();
      kicks.push({ at, ...selector });
      for (const c of sockets.openList) if (matches(c, selector)) c.kickedAt = at;
      const node = nodes[Math.floor(random() * nodes.length)]!;
      const connection = new KeepAliveConnection(HOST, node.port);
      await connection.open();
      try {
        const result = await connection.request(postRequest(HOST, node.port, path, JSON.stringify(body)));
        if (result.status !== 200) log(`  kick ${path} answered ${result.status} ${result.body}`);
      } finally {
        connection.close();
      }
      // Every socket the kick matched when it was sent must be closed by now.
      await sleep(o.kickCheckMs);
      for (const c of sockets.openList) if (c.kickedAt === at) kickStats.missed++;
    };
    const kicking = new Set<Promise<void>>();
    const track = (p: Promise<void>): void => {
      kicking.add(p);
      void p.finally(() => kicking.delete(p));
    };
    const kickKey = (): void => {
      if (paused) return;
      kickStats.keyKicks++;
      track(
        sendKick({ key: KICK_KEY, secret: SECRET }, '/api/kick', { key: KICK_KEY }).catch((e) =>
          log(`  kick failed: ${String(e)}`),
        ),
      );
    };
    const kickUser = (): void => {
      if (paused) return;
      const candidates = sockets.openList.filter((c) => c.key === KEY && c.protocol === 'v4' && c.user);
      const target = candidates[Math.floor(random() * candidates.length)];
      if (!target?.user) return;
      kickStats.userKicks++;
      track(
        sendKick({ key: KEY, secret: SECRET, user: target.user }, '/api/v4/kick', {
          key: KEY,
          user: target.user,
        }).catch((e) => log(`  kick failed: ${String(e)}`)),
      );
    };

    // Readings.
    const samples: NodeSample[][] = nodes.map(() => []);
    const redisSamples: RedisSample[] = [];
    const fleetSamples: FleetSample[] = [];
    const started = performance.now();
    const elapsed = (): number => (performance.now() - started) / 1000;
    // prom-client resets its event-loop histogram at every scrape, and checkpoints scrape too (for
    // switchboard_connections): each scrape's lag is kept, and a sample reports the worst p99, max
    // and mean of the scrapes since the previous sample, so no stretch of the run goes unseen.
    const lagSince = nodes.map(() => ({ p99: 0, max: 0, mean: 0 }));
    const scrapeNode = async (i: number): Promise<string> => {
      const text = await scrape(metricsPorts[i]!);
      const lag = lagSince[i]!;
      const seconds = (name: string): number => (metricValue(text, name) ?? 0) * 1000;
      lag.p99 = Math.max(lag.p99, seconds('nodejs_eventloop_lag_p99_seconds'));
      lag.max = Math.max(lag.max, seconds('nodejs_eventloop_lag_max_seconds'));
      lag.mean = Math.max(lag.mean, seconds('nodejs_eventloop_lag_mean_seconds'));
      return text;
    };
    const nodeConnections = async (): Promise<number[]> =>
      Promise.all(
        metricsPorts.map(async (_, i) => metricValue(await scrapeNode(i), 'switchboard_connections') ?? 0),
      );
    const sample = async (): Promise<void> => {
      const t = Math.round(elapsed() * 10) / 10;
      await Promise.all(
        nodes.map(async (node, i) => {
          const text = await scrapeNode(i);
          const value = (name: string): number => metricValue(text, name) ?? 0;
          const lag = lagSince[i]!;
          lagSince[i] = { p99: 0, max: 0, mean: 0 };
          samples[i]!.push({
            t,
            rssBytes: rssKiB(node.pid) * 1024,
            heapUsedBytes: value('nodejs_heap_size_used_bytes'),
            heapTotalBytes: value('nodejs_heap_size_total_bytes'),
            heapAfterGcBytes: value('switchboard_heap_used_after_gc_bytes'),
            lagP99Ms: lag.p99,
            lagMaxMs: lag.max,
            lagMeanMs: lag.mean,
            connections: value('switchboard_connections'),
            cpuSeconds: cpuSeconds(node.pid),
          });
        }),
      );
      const memory = await redisClient.info('memory');
      redisSamples.push({
        t,
        usedMemoryBytes: Number(/used_memory:(\d+)/.exec(memory)?.[1] ?? 0),
        keys: await redisClient.dbsize(),
        cpuSeconds: cpuSeconds(redisPid),
      });
      const stats = await sockets.stats();
      fleetSamples.push({
        t,
        open: sockets.openList.length,
        opening: sockets.opening,
        framesReceived: stats.frames,
        bytesReceived: stats.bytes,
        pingsAnswered: stats.pings,
      });
      const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
      log(
        `  ${String(Math.round(t)).padStart(4)} s  open ${sockets.openList.length}` +
          samples
            .map((s, i) => {
              const last = s[s.length - 1]!;
              return `  n${i + 1}: rss ${mib(last.rssBytes)} heap ${mib(last.heapUsedBytes)} MiB lag p99 ${last.lagP99Ms.toFixed(1)} ms`;
            })
            .join('') +
          `  redis ${mib(redisSamples[redisSamples.length - 1]!.usedMemoryBytes)} MiB`,
      );
    };

    const channelNames = [
      ...Array.from({ length: o.channels }, (_, i) => ({ key: KEY, channel: `soak-${i}` })),
      ...Array.from({ length: 10 }, (_, i) => ({ key: KICK_KEY, channel: `kick-${i}` })),
    ];
    const actualView = async (): Promise<CountsView> => {
      const view: CountsView = { channels: {}, sums: {}, presence: {}, nodes: await nodeConnections() };
      for (const key of [KEY, KICK_KEY]) {
        view.sums[key] = await observer.counts.sum(key);
        for (const item of (await observer.counts.list(key)).items)
          view.channels[`${key}|${item.channel}`] = item.count;
      }
      await Promise.all(
        channelNames.flatMap(({ key, channel }) => [
          observer.presence.roster({ key, protocol: 'v3', channel }, 1).then((r) => {
            if (r.total) view.presence[`${key}|v3|${channel}`] = r.total;
          }),
          observer.presence.identities({ key, protocol: 'v4', channel }, 0, 1).then((r) => {
            if (r.count) view.presence[`${key}|v4|${channel}`] = r.count;
          }),
        ]),
      );
      return view;
    };
    /** Churn paused: waits for opens in flight, then for the cluster to agree with the sockets. */
    const checkpoint = async (label: string): Promise<CheckpointResult & { label: string }> => {
      const t = elapsed();
      const waitUntil = Date.now() + o.settleTimeoutS * 1000;
      while (sockets.opening > 0 && Date.now() < waitUntil) await sleep(50);
      const pausedAt = Date.now();
      let drift: string[] = [];
      for (;;) {
        // Read after the cluster: a close the sockets saw meanwhile (a kick) is in both.
        const actual = await actualView();
        drift = countsDrift(expectedView(sockets.openList, nodes.length, [KEY, KICK_KEY]), actual);
        if (drift.length === 0 || Date.now() > waitUntil) break;
        await sleep(250);
      }
      const result = {
        label,
        t,
        open: sockets.openList.length,
        drift: drift.slice(0, 20),
        ...(drift.length === 0 ? { settledMs: Date.now() - pausedAt } : {}),
      };
      log(
        `  checkpoint ${label} at ${Math.round(t)} s: ${result.open} open, ` +
          (drift.length
            ? `DRIFT (${drift.length}): ${drift.slice(0, 3).join('; ')}`
            : `agreed in ${result.settledMs} ms`),
      );
      return result;
    };

    // The run.
    log(
      `soak: ${o.connections} sockets, churn ${o.churn}/s, ${o.publishRate} publishes/s on ${o.channels} channels, ${o.durationS} s`,
    );
    const checkpoints: (CheckpointResult & { label: string })[] = [];
    const timers = [
      setInterval(tick, tickMs),
      setInterval(kickKey, o.keyKickEveryS * 1000),
      setInterval(kickUser, o.userKickEveryS * 1000),
    ];
    let sampling = Promise.resolve();
    const sampler = setInterval(() => {
      sampling = sampling.then(sample).catch((e) => log(`  sample failed: ${String(e)}`));
    }, o.sampleS * 1000);
    let nextCheckpoint = o.checkpointS;
    // Opens are judged after warm-up only: the fill-up of a loaded machine may time some out.
    const warmupS = heapRule(o.durationS).warmupS;
    let atWarmup: { opened: number; failed: number } | undefined;
    try {
      while (elapsed() < o.durationS) {
        if (!atWarmup && elapsed() >= warmupS)
          atWarmup = { opened: sockets.counters.opened, failed: sockets.counters.failed };
        await sleep(Math.min(500, Math.max(10, (o.durationS - elapsed()) * 1000)));
        if (elapsed() >= nextCheckpoint && o.durationS - elapsed() > o.checkpointS / 4) {
          nextCheckpoint += o.checkpointS;
          paused = true;
          checkpoints.push(await checkpoint(`${Math.round(elapsed())} s`));
          paused = false;
        }
      }
      paused = true;
      clearInterval(sampler);
      await sampling;
      await sample();
      // Kicks still waiting for their check finish first.
      await Promise.all([...kicking]);
      checkpoints.push(await checkpoint('end, under load'));
    } finally {
      for (const timer of timers) clearInterval(timer);
      clearInterval(sampler);
    }
    // What the gateways saw close, by code (switchboard_closes_total), to set beside the client's view.
    const serverCloses = await Promise.all(
      nodes.map(async (_, i) => {
        const counts: Record<string, number> = {};
        for (const line of (await scrape(metricsPorts[i]!)).split('\n')) {
          const match = /^switchboard_closes_total\{.*code="([^"]+)".*\} (\d+)/.exec(line);
          if (match && Number(match[2]) > 0) counts[match[1]!] = Number(match[2]);
        }
        return counts;
      }),
    );
    sockets.closeAll();
    checkpoints.push(await checkpoint('after every socket closed'));
    // Nothing of the run may stay in Redis: counts and presence keys are deleted when emptied.
    const leftovers: string[] = [];
    for (const pattern of [`${REDIS_PREFIX}:counts:*`, `${REDIS_PREFIX}:presence:*`]) {
      let cursor = '0';
      do {
        const [next, found] = await redisClient.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        leftovers.push(...found);
      } while (cursor !== '0');
    }
    const endS = o.durationS;
    const rule = heapRule(endS, o.maxGrowth);
    const warm = atWarmup ?? { opened: 0, failed: 0 };
    const opensAfterWarmup = {
      opened: sockets.counters.opened - warm.opened,
      failed: sockets.counters.failed - warm.failed,
    };
    const heap = samples.map((s) => heapVerdict(s, endS, rule));
    const gatewayErrors = nodes.flatMap((n, i) =>
      n.lines.filter((l) => l.trim()).map((l) => `node ${i + 1}: ${l}`),
    );
    const verdict = soakVerdict({
      heap,
      checkpoints,
      leftovers,
      unexpectedCloses,
      wrongKicks: kickStats.wrong,
      missedKicks: kickStats.missed,
      failedOpens: opensAfterWarmup.failed,
      opens: opensAfterWarmup.opened + opensAfterWarmup.failed,
      maxFailedShare: 0.001,
    });
    return {
      options: Object.fromEntries(Object.entries(o).filter(([name]) => name !== 'log')) as Omit<
        SoakOptions,
        'log'
      >,
      nodes: nodeIds.map((nodeId, i) => ({ nodeId, samples: samples[i]! })),
      redis: redisSamples,
      fleet: fleetSamples,
      checkpoints,
      counters: sockets.counters,
      kicks: kickStats,
      publishes: {
        sent: publish.sent,
        failed: publish.failed,
        skipped: publish.skipped,
        ...(publish.firstError ? { firstError: publish.firstError } : {}),
      },
      leftovers,
      heap,
      unexpectedCloses,
      opensAfterWarmup,
      gatewayErrors,
      unexpectedDetails,
      serverCloses,
      verdict,
    };
  } finally {
    fleet?.stop();
    for (const p of publishers) p.close();
    await engine?.close().catch(() => undefined);
    redisClient.disconnect();
    await Promise.all(nodes.map((n) => n.stop()));
    await redis.stop();
  }
}
