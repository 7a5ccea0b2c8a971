import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { waitFor } from '@switchboard/harness';
import { ChaosCluster, CLUSTER_TIMING, isRedisCluster } from './cluster';
import type { Incarnation } from './cluster';
import { appProblems, deliveryProblems, describePositions, epochRanking } from './delivery';
import type { DeliveryStats } from './delivery';
import { Fleet } from './fleet';
import type { ChaosClient } from './fleet';
import { scanKeys } from './keyscan';
import { describeEvent, planChaos, TOPICS } from './plan';
import type { ChaosEvent, ChaosPlan, FaultKind, Topic } from './plan';
import { Publisher, topicId } from './publisher';
import { observe, truthOf } from './state';

/**
 * One chaos run (docs/reliability.md, "Chaos run"): the cluster, the clients and the publisher,
 * the seeded schedule of faults, then convergence and the checks. Everything it does is printed
 * as it happens, starting with the seed, so a failing run can be replayed.
 */

export interface ChaosOptions {
  readonly seed: number;
  readonly durationMs: number;
  /** Per topic, one publish every this many ms (five topics: 170 ms is about 30 publishes a second). */
  readonly publishIntervalMs?: number;
  /**
   * The schedule fails Redis over (`--failover`): a primary with a replica and sentinels, or with
   * `redisCluster` a master of the cluster.
   */
  readonly failover?: boolean;
  /** Redis is a Redis Cluster of three masters with one replica each (`--cluster`). */
  readonly redisCluster?: boolean;
  /** Where the run's lines go (default: stdout). */
  readonly log?: (line: string) => void;
}

export interface CheckResult {
  readonly name: string;
  readonly problems: string[];
  readonly detail: string;
}

export interface ChaosResult {
  readonly seed: number;
  readonly durationMs: number;
  readonly plan: ChaosPlan;
  /** Faults carried out, per kind (churn included). */
  readonly executed: Record<FaultKind, number>;
  /** Scheduled events not carried out because their target was still down (a slow restart). */
  readonly skipped: string[];
  readonly checks: CheckResult[];
  readonly ok: boolean;
  readonly summary: string[];
}

/** Allowed for a gateway to start and enter HAProxy's rotation (or Redis to come back), when planning. */
const RESTART_ALLOWANCE_MS = 5000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const { seed, durationMs } = options;
  const out = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const t0 = Date.now();
  const say = (line: string): void => out(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  const flags = `${options.redisCluster ? ' --cluster' : ''}${options.failover ? ' --failover' : ''}`;
  out(
    `chaos seed=${seed} duration=${durationMs / 1000}s${flags} ` +
      `(replay: npm run chaos --${flags} --seed ${seed} --duration ${durationMs / 1000})`,
  );
  const plan = planChaos(
    seed,
    durationMs,
    {
      drainGraceMs: CLUSTER_TIMING.drainGraceMs,
      restartAllowanceMs: RESTART_ALLOWANCE_MS,
    },
    { failover: options.failover ?? false },
  );
  const counts = (list: readonly ChaosEvent[]): string =>
    (['kill-gateway', 'term-gateway', 'restart-redis', 'failover-redis', 'churn'] as const)
      .map((kind) => `${list.filter((e) => e.kind === kind).length} ${kind}`)
      .join(', ');
  out(`plan: ${plan.initialClients.length} clients, ${plan.events.length} events (${counts(plan.events)})`);

  const cluster = await ChaosCluster.launch(say, {
    failover: options.failover ?? false,
    redisCluster: options.redisCluster ?? false,
  });
  const fleet = new Fleet(cluster);
  let publisher: Publisher | undefined;
  let redis: Redis | Cluster | undefined;
  const executed: Record<FaultKind, number> = {
    'kill-gateway': 0,
    'term-gateway': 0,
    'restart-redis': 0,
    'failover-redis': 0,
    churn: 0,
  };
  const skipped: string[] = [];
  const actionFailures: string[] = [];
  try {
    const redisServer = cluster.redis;
    say(
      `cluster up: ${
        isRedisCluster(redisServer)
          ? `Redis Cluster ${redisServer.nodesEnv} (3 masters, 1 replica each)`
          : `Redis :${redisServer.port}`
      }, gateways ${Object.entries(cluster.ports)
        .map(([name, port]) => `${name} :${port}`)
        .join(', ')}, HAProxy :${cluster.balancerPort}, account API :${cluster.accountPort}`,
    );
    for (const spec of plan.initialClients) fleet.open(spec);
    await fleet.until(
      () => fleet.active.every((client) => client.live),
      30_000,
      () => `initial clients not live: ${notLive(fleet)}`,
    );
    say(`${fleet.active.length} clients connected; publishing to ${TOPICS.length} topics`);
    publisher = new Publisher(cluster, TOPICS, options.publishIntervalMs ?? 170, () => fleet.changed());

    // ---- the schedule --------------------------------------------------------------------
    const start = Date.now();
    const pending: Promise<void>[] = [];
    const execute = async (event: ChaosEvent): Promise<void> => {
      switch (event.kind) {
        case 'kill-gateway':
        case 'term-gateway': {
          const { gateway } = event;
          if (!cluster.live.has(gateway)) {
            skipped.push(`${describeEvent(event)} (still restarting)`);
            return say(`skipped: ${describeEvent(event)}: ${gateway} is still restarting`);
          }
          say(describeEvent(event));
          executed[event.kind]++;
          const signalled = Date.now();
          if (event.kind === 'kill-gateway') await cluster.killGateway(gateway);
          else {
            const outcome = await cluster.terminateGateway(gateway, event.killAfterMs);
            say(
              outcome === 'drained'
                ? `${gateway} drained and exited in ${Date.now() - signalled} ms`
                : `${gateway} SIGKILLed while draining, ${Date.now() - signalled} ms after the SIGTERM`,
            );
          }
          await delay(event.downMs);
          const restarted = Date.now();
          await cluster.startGateway(gateway);
          return say(`${gateway} restarted (ready in ${Date.now() - restarted} ms)`);
        }
        case 'restart-redis': {
          if (!cluster.redisUp) {
            skipped.push(`${describeEvent(event)} (Redis still down)`);
            return say(`skipped: ${describeEvent(event)}: Redis is still down`);
          }
          say(describeEvent(event));
          executed[event.kind]++;
          await cluster.killRedis();
          await delay(event.downMs);
          await cluster.startRedisAgain();
          return say('Redis back (empty)');
        }
        case 'failover-redis': {
          if (!cluster.redisUp) {
            skipped.push(`${describeEvent(event)} (Redis still down)`);
            return say(`skipped: ${describeEvent(event)}: Redis is still down`);
          }
          say(
            isRedisCluster(cluster.redis)
              ? 'Redis Cluster master SIGKILL (its replica in sync), the cluster promotes the replica; the killed node returns as its replica'
              : describeEvent(event),
          );
          executed[event.kind]++;
          const started = Date.now();
          const { from, to } = await cluster.failoverRedis();
          return say(`Redis failed over from :${from} to :${to} in ${Date.now() - started} ms`);
        }
        case 'churn': {
          executed.churn++;
          for (const name of event.close) fleet.byName(name)?.close();
          for (const spec of event.open) fleet.open(spec);
          return say(`${describeEvent(event)} → ${fleet.active.length} clients`);
        }
      }
    };
    for (const event of plan.events) {
      await delay(start + event.at - Date.now());
      pending.push(
        execute(event).catch((error: Error) => {
          actionFailures.push(`${describeEvent(event)}: ${error.message}`);
          say(`FAILED: ${describeEvent(event)}: ${error.message}`);
        }),
      );
    }
    await delay(start + durationMs - Date.now());
    await Promise.all(pending);
    say(`schedule over (${counts(plan.events)} planned; ${skipped.length} skipped); converging`);

    // ---- convergence -------------------------------------------------------------------------
    const convergence: string[] = [];
    const step = async (what: string, action: () => Promise<void>): Promise<void> => {
      try {
        await action();
      } catch (error) {
        convergence.push(`${what}: ${(error as Error).message}`);
        say(`did not converge: ${what}: ${(error as Error).message}`);
      }
    };
    if (isRedisCluster(redisServer))
      await step('Redis Cluster settled', async () => {
        say(`Redis Cluster settled: ${await redisServer.settled(30_000)} (master ← replica in sync)`);
      });
    await step('gateways in rotation', async () => {
      for (const name of cluster.live.keys()) await cluster.waitUntilInRotation(name);
    });
    await step('clients live', () =>
      fleet.until(
        () => fleet.active.every((client) => client.live),
        30_000,
        () => `not live within 30 s: ${notLive(fleet)}`,
      ),
    );
    // Some publishing with everything up, so each subscription's tail is live delivery.
    const marks = TOPICS.map((topic) => publisher!.acked(topic).length + 10);
    await step('publishing after the schedule', () =>
      fleet.until(
        () => TOPICS.every((topic, i) => publisher!.acked(topic).length >= marks[i]!),
        15_000,
        () => `fewer than 10 acknowledged publishes per topic within 15 s after the schedule`,
      ),
    );
    await publisher.stop();
    const finals = new Map<string, { epoch: string; offset: number }>();
    for (const topic of TOPICS) finals.set(topicId(topic), await finalPosition(cluster, topic));
    await step('every subscription at its topic’s final position', () =>
      fleet.until(
        () =>
          fleet.active.every(
            (client) =>
              client.live &&
              [...client.tracks.values()].every((track) => {
                const final = finals.get(`${track.protocol}/${track.channel}`)!;
                return track.epoch === final.epoch && track.offset === final.offset;
              }),
          ),
        20_000,
        () => `not at the final position within 20 s: ${behind(fleet, finals)}`,
      ),
    );
    redis = isRedisCluster(redisServer)
      ? new Cluster(
          redisServer.nodes.map(({ host, port }) => ({ host, port })),
          {
            lazyConnect: true,
            redisOptions: { maxRetriesPerRequest: 2 },
          },
        )
      : new Redis(redisServer.url, { maxRetriesPerRequest: 2, lazyConnect: true });
    await redis.connect();
    let last = await observe(cluster, fleet, redis);
    const convergeMs = CLUSTER_TIMING.nodeTimeoutMs * 3 + 10_000;
    const converging = Date.now();
    await step('counts and members', () =>
      waitFor(
        `counts and members to match the sockets open within ${convergeMs} ms`,
        async () => (last = await observe(cluster, fleet, redis!)).differences.length === 0,
        convergeMs,
        250,
      ),
    );
    say(`converged in ${Date.now() - converging} ms: ${last.summary}`);

    // ---- the checks --------------------------------------------------------------------------
    const truth = truthOf(fleet);
    const scan = await scanKeys(cluster, redis, truth);
    for (const key of scan.keys) say(`${key.problem ? 'GHOST ' : ''}${key.key} (${key.type}): ${key.note}`);
    const checks: CheckResult[] = [
      { name: 'faults carried out', problems: actionFailures, detail: `${counts(plan.events)} planned` },
      { name: 'convergence', problems: convergence, detail: '' },
      { name: 'counts and members match the sockets open', problems: last.differences, detail: last.summary },
      {
        name: 'every Redis key explained',
        problems: scan.problems,
        detail: `${scan.keys.length} keys: ${[...scan.byPattern].map(([pattern, n]) => `${n} × ${pattern}`).join('; ')}`,
      },
      processCheck(cluster),
      socketCheck(fleet),
      deliveryCheck(fleet, publisher, finals),
    ];
    const ok = checks.every((check) => check.problems.length === 0);
    const summary = [
      `seed=${seed} duration=${durationMs / 1000}s: ${ok ? 'PASSED' : 'FAILED'}`,
      `faults: ${executed['kill-gateway']} gateway SIGKILLs, ${executed['term-gateway']} gateway SIGTERMs, ` +
        `${executed['restart-redis']} Redis restarts, ${executed['failover-redis']} Redis failovers, ${executed.churn} churns (${fleet.clients.length} clients in all, ` +
        `${fleet.active.length} at the end); ${skipped.length} skipped; ${cluster.refusedStarts} gateway starts refused while Redis was down`,
      `publications: ${publisher.attempts} sent, ${publisher.acknowledged} acknowledged; not acknowledged: ${
        [...publisher.failures].map(([why, n]) => `${n} × ${why}`).join('; ') || 'none'
      }`,
      ...checks.map(
        (check) =>
          `${check.problems.length === 0 ? 'ok  ' : 'FAIL'} ${check.name}${check.detail ? `: ${check.detail}` : ''}` +
          check.problems.map((problem) => `\n       - ${problem}`).join(''),
      ),
      `load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}; ${((Date.now() - t0) / 1000).toFixed(0)} s in all`,
    ];
    for (const line of summary) out(line);
    return { seed, durationMs, plan, executed, skipped, checks, ok, summary };
  } finally {
    fleet.closeAll();
    await publisher?.stop();
    redis?.disconnect();
    await cluster.stop();
    keepLogs(cluster, seed, t0, out);
  }
}

/**
 * Every process's output, one file per incarnation (`gw2-3.log`: the third start of gw2), in a
 * directory of the system's temporary one named for the seed: a failure that does not come
 * back on a replay can still be read afterwards.
 */
function keepLogs(cluster: ChaosCluster, seed: number, t0: number, out: (line: string) => void): void {
  const dir = join(tmpdir(), `switchboard-chaos-${seed}-${new Date(t0).toISOString().replace(/[:.]/g, '')}`);
  try {
    mkdirSync(dir, { recursive: true });
    const starts = new Map<string, number>();
    for (const incarnation of cluster.incarnations) {
      const n = (starts.get(incarnation.name) ?? 0) + 1;
      starts.set(incarnation.name, n);
      writeFileSync(join(dir, `${incarnation.name}-${n}.log`), `${incarnation.proc.lines.join('\n')}\n`);
    }
    out(`process logs: ${dir}`);
  } catch (error) {
    out(`process logs not kept: ${(error as Error).message}`);
  }
}

async function finalPosition(
  cluster: ChaosCluster,
  topic: Topic,
): Promise<{ epoch: string; offset: number }> {
  const path = topic.protocol === 'v3' ? '/api/history' : '/api/v4/history';
  const response = await fetch(`${cluster.balancerUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      key: cluster.key.key,
      secret: cluster.key.secret,
      channel: topic.channel,
      limit: 0,
    }),
    signal: AbortSignal.timeout(5000),
  });
  const body = (await response.json()) as { epoch: string; offset: number };
  if (response.status !== 200)
    throw new Error(`${path} ${topic.channel}: ${response.status} ${JSON.stringify(body)}`);
  return { epoch: body.epoch, offset: body.offset };
}

function notLive(fleet: Fleet): string {
  return (
    fleet.active
      .filter((client) => !client.live)
      .map((client) => client.describe())
      .join('; ') || 'none'
  );
}

function behind(fleet: Fleet, finals: Map<string, { epoch: string; offset: number }>): string {
  const lines = fleet.active.flatMap((client) =>
    [...client.tracks.values()]
      .filter((track) => {
        const final = finals.get(`${track.protocol}/${track.channel}`)!;
        return track.epoch !== final.epoch || track.offset !== final.offset;
      })
      .map((track) => `${client.name} ${track.protocol}/${track.channel} at ${track.epoch}:${track.offset}`),
  );
  return `${lines.slice(0, 10).join(', ')}; finals ${JSON.stringify([...finals])}`;
}

/** No process exited except those the schedule signalled, and those as the signal says. */
function processCheck(cluster: ChaosCluster): CheckResult {
  const problems: string[] = [];
  const tail = (incarnation: Incarnation): string => incarnation.proc.lines.slice(-5).join(' | ');
  let killed = 0;
  let terminated = 0;
  let killedMidDrain = 0;
  for (const incarnation of cluster.incarnations) {
    const { signal, exit, name } = incarnation;
    const pid = incarnation.proc.child.pid;
    if (incarnation.refusedStart) continue;
    if (!signal) {
      if (exit)
        problems.push(
          `${name} (pid ${pid}) exited by itself: code ${exit.code}, signal ${exit.signal}: ${tail(incarnation)}`,
        );
    } else if (signal.name === 'SIGKILL') {
      killed++;
      if (exit?.signal !== 'SIGKILL')
        problems.push(`${name} (pid ${pid}) SIGKILLed, but exit ${JSON.stringify(exit)}`);
    } else if (incarnation.killedMidDrainAt !== undefined) {
      killedMidDrain++;
      if (exit?.signal !== 'SIGKILL' && exit?.code !== 0)
        problems.push(`${name} (pid ${pid}) SIGKILLed while draining, but exit ${JSON.stringify(exit)}`);
    } else {
      terminated++;
      const took = exit ? exit.at - signal.at : undefined;
      if (exit?.code !== 0 || took === undefined || took > CLUSTER_TIMING.drainGraceMs + 3000)
        problems.push(
          `${name} (pid ${pid}) SIGTERMed: exit ${JSON.stringify(exit)} after ${took} ms: ${tail(incarnation)}`,
        );
    }
    for (const line of incarnation.proc.lines)
      if (line.includes('"level":60') || /uncaught|unhandled/i.test(line))
        problems.push(`${name} (pid ${pid}): ${line}`);
  }
  const errors = new Map<string, number>();
  for (const incarnation of cluster.incarnations)
    for (const line of incarnation.proc.lines) {
      if (!line.includes('"level":50')) continue;
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 120);
      errors.set(msg, (errors.get(msg) ?? 0) + 1);
    }
  // How the cluster handled the faults, from the gateways' own logs (docs/operations.md, "Log events").
  const logged = (msg: string): number =>
    cluster.incarnations.reduce(
      (sum, i) => sum + i.proc.lines.filter((line) => line.includes(`"msg":"${msg}"`)).length,
      0,
    );
  const handled =
    `${logged('node declared dead; removing its presence and counts')} dead nodes cleaned up by a survivor, ` +
    `Redis lost ${logged('Redis lost')} times (gateways and account API) and ${logged('local state rewritten to the engine')} rewrites of a node's state after Redis came back`;
  const running = cluster.incarnations.filter((i) => !i.exit).length;
  return {
    name: 'no process crashed (only those the schedule killed exited)',
    problems,
    detail:
      `${cluster.incarnations.length} processes started (${running} running, ${killed} SIGKILLed, ${terminated} SIGTERMed and exited 0, ${killedMidDrain} SIGKILLed while draining, ` +
      `${cluster.refusedStarts} refused to start while Redis was down); ${handled}; error log lines: ${
        [...errors].map(([msg, n]) => `${n} × ${msg}`).join('; ') || 'none'
      }`,
  };
}

/** Each client that is still open holds one socket, each closed one none. */
function socketCheck(fleet: Fleet): CheckResult {
  const problems: string[] = [];
  for (const client of fleet.clients) {
    const open = client.openTaps.length;
    if (client.closed ? open !== 0 : open !== 1)
      problems.push(`${client.name} (${client.closed ? 'closed' : 'open'}) holds ${open} sockets`);
    if (client.errors.length > 0) problems.push(`${client.name}: ${client.errors.join('; ')}`);
  }
  const sockets = fleet.clients.reduce((sum, client) => sum + client.taps.length, 0);
  const retried = fleet.clients.reduce((sum, client) => sum + client.retriedSubscribes, 0);
  return {
    name: 'clients hold one socket each and none was refused for good',
    problems,
    detail: `${sockets} sockets opened by ${fleet.clients.length} clients; ${retried} secondary subscribes refused with retry: true (engine unreachable) and sent again`,
  };
}

function deliveryCheck(
  fleet: Fleet,
  publisher: Publisher,
  finals: Map<string, { epoch: string; offset: number }>,
): CheckResult {
  const problems: string[] = [];
  const stats: DeliveryStats = {
    publications: 0,
    resumes: 0,
    recovered: 0,
    unrecovered: 0,
    gapNotices: 0,
    caughtUp: 0,
    covered: 0,
  };
  let subscriptions = 0;
  for (const topic of TOPICS) {
    const id = topicId(topic);
    const acks = publisher.acked(topic);
    const final = finals.get(id)!;
    const seen = new Set<string>();
    for (const ack of acks) {
      const position = `${ack.epoch}:${ack.offset}`;
      if (seen.has(position)) problems.push(`${id}: two publishes acknowledged at ${position}`);
      seen.add(position);
    }
    const tracks = fleet.clients.flatMap((client) =>
      [...client.tracks.values()]
        .filter((track) => track.protocol === topic.protocol && track.channel === topic.channel)
        .map((track) => ({ client, track })),
    );
    const rank = epochRanking(
      acks,
      tracks.map(({ track }) => track),
    );
    const beyond = acks.filter(
      (ack) =>
        rank(ack.epoch) > rank(final.epoch) || (ack.epoch === final.epoch && ack.offset > final.offset),
    );
    if (beyond.length > 0)
      problems.push(`${id}: acknowledged beyond the final position ${final.epoch}:${final.offset}`);
    for (const { client, track } of tracks) {
      subscriptions++;
      const end = client.closed ? undefined : final;
      const found = [
        ...deliveryProblems(track, acks, rank, end, stats),
        ...appProblems(track, client.app.get(track.channel)!),
      ];
      if (found.length > 0)
        problems.push(
          `${subject(client)} on ${id}: ${found.join('; ')} [positions: ${describePositions(track)}]`,
        );
    }
  }
  return {
    name: 'recovering clients got every acknowledged publication once, in order, or were told recovered: false',
    problems,
    detail:
      `${subscriptions} subscriptions received ${stats.publications} publications; ${stats.resumes} resumes ` +
      `(${stats.recovered} recovered: true catching up ${stats.caughtUp} publications, ${stats.unrecovered} recovered: false), ` +
      `${stats.gapNotices} recovered: false notices on open subscriptions (a gateway that lost publications with Redis); ` +
      `${stats.covered} acknowledged publications missed and covered by a recovered: false`,
  };
}

const subject = (client: ChaosClient): string => `${client.name}${client.closed ? ' (closed by churn)' : ''}`;
