import { BalancedCluster, within } from './support/balanced-cluster';
import type { Waiters } from './support/balanced-cluster';
import { RecoveringFleet } from './support/recovering-client';
import type { ChannelLog, PositionEntry, RecoveringClient } from './support/recovering-client';

/**
 * Delivery guarantees end to end (docs/protocol.md, "History and recovery"): Redis, three gateway
 * processes behind HAProxy rendered from deploy/haproxy.cfg, opted-in clients that implement the
 * documented recovery flow (V3 and V4 primaries with `recover=1`, V4 secondaries with
 * `recover: true`), and a backend publishing through the balancer all along, recording the
 * offset and epoch of every publish it was answered: the acknowledged publications.
 *
 * - Rolling restart (SIGTERM, drain, start again) and a crash (SIGKILL): every acknowledged
 *   publication reaches every subscription exactly once, in offset order, and every resume is
 *   `recovered: true`.
 * - Redis restarted empty (history lost): no silent loss. A publication a subscription did not
 *   receive is covered by a `recovered: false` position (see `silentLossProblems`).
 *
 * Needs `haproxy` (Debian package `haproxy`; .ci/run installs it). Without it the suite fails.
 */
jest.setTimeout(45_000);

const NODE_NAMES = ['gw1', 'gw2', 'gw3'] as const;
const DRAIN_GRACE_MS = 2000;
/** Per channel; three channels make 75 publishes a second. */
const PUBLISH_INTERVAL_MS = 40;
/** Acknowledged publishes per channel to wait for between two faults, so each phase has traffic. */
const PHASE_PUBLISHES = 10;
const CLIENTS_PER_KIND = 4;

let cluster: BalancedCluster | undefined;
/** The running scenario's clients and publisher (afterEach stops them when a test failed). */
let current: { fleet: RecoveringFleet; publisher: Publisher } | undefined;

// ---------------------------------------------------------------------------------------------
// The backend: one publish loop per channel through the balancer, paced, each answer recorded.

interface Target {
  readonly channel: string;
  readonly publish: string;
  readonly history: string;
}

/** A publish the cluster answered 200 with its position. */
interface Ack {
  readonly seq: number;
  readonly offset: number;
  readonly epoch: string;
}

interface Position {
  readonly epoch: string;
  readonly offset: number;
}

class Publisher {
  readonly acks = new Map<string, Ack[]>();
  /** Publishes not acknowledged (refused, failed in flight): they may or may not have happened. */
  readonly failed: string[] = [];
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly startedAt = Date.now();
  private stoppedAt: number | undefined;

  constructor(
    private readonly targets: readonly Target[],
    private readonly waiters: Waiters,
  ) {
    this.loops = targets.map((target) => this.loop(target));
  }

  acked(channel: string): Ack[] {
    return this.acks.get(channel) ?? [];
  }

  /** Resolves once every channel has `count` more acknowledged publishes (matching `which`). */
  async progress(
    count: number,
    what: string,
    which: (ack: Ack, channel: string) => boolean = () => true,
  ): Promise<void> {
    const counted = (channel: string): number =>
      this.acked(channel).filter((ack) => which(ack, channel)).length;
    const marks = this.targets.map((t) => counted(t.channel) + count);
    await this.waiters.until(
      () => this.targets.every((t, i) => counted(t.channel) >= marks[i]!),
      15_000,
      `${what}: ${count} more acknowledged publishes per channel (failed so far: ${this.failed.slice(-3).join(' | ')})`,
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.stoppedAt ??= Date.now();
  }

  summary(): string {
    const acked = [...this.acks.values()].reduce((sum, list) => sum + list.length, 0);
    const seconds = ((this.stoppedAt ?? Date.now()) - this.startedAt) / 1000;
    return `${acked} publishes acknowledged in ${seconds.toFixed(1)} s (${(acked / seconds).toFixed(0)}/s), ${this.failed.length} not`;
  }

  private async loop(target: Target): Promise<void> {
    const acks: Ack[] = [];
    this.acks.set(target.channel, acks);
    for (let seq = 1; this.running; seq++) {
      const due = Date.now() + PUBLISH_INTERVAL_MS;
      try {
        const answer = await cluster!.clusterApi(
          target.publish,
          { channel: target.channel, message: { event: 'tick', data: { seq } } },
          { signal: AbortSignal.timeout(5000) },
        );
        const body = answer.json as { offset?: unknown; epoch?: unknown } | undefined;
        if (answer.status === 200 && typeof body?.offset === 'number' && typeof body.epoch === 'string')
          acks.push({ seq, offset: body.offset, epoch: body.epoch });
        else this.failed.push(`${target.channel} #${seq}: ${answer.status} ${answer.text.slice(0, 160)}`);
      } catch (error) {
        this.failed.push(`${target.channel} #${seq}: ${(error as Error).message}`);
      }
      this.waiters.changed();
      const pause = due - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause)); // pacing, not waiting
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A scenario: fresh channels, twelve clients (sixteen subscriptions), the publisher.

interface Run {
  readonly fleet: RecoveringFleet;
  readonly publisher: Publisher;
  readonly targets: readonly Target[];
}

async function startRun(scenario: string): Promise<Run> {
  const v3 = `${scenario}-v3`;
  const v4 = `${scenario}-v4`;
  const secondary = `${scenario}-v4-secondary`;
  const fleet = new RecoveringFleet(cluster!);
  for (let i = 0; i < CLIENTS_PER_KIND; i++) {
    fleet.add({ name: `v3-${i}`, protocol: 'v3', channel: v3 });
    fleet.add({ name: `v4-${i}`, protocol: 'v4', channel: v4 });
    fleet.add({ name: `v4+secondary-${i}`, protocol: 'v4', channel: v4, secondary });
  }
  await fleet.until(() => fleet.allLive, 15_000, `${scenario}: every subscription has its position`);
  const targets: Target[] = [
    { channel: v3, publish: '/api/publish', history: '/api/history' },
    { channel: v4, publish: '/api/v4/publish', history: '/api/v4/history' },
    { channel: secondary, publish: '/api/v4/publish', history: '/api/v4/history' },
  ];
  const publisher = new Publisher(targets, fleet);
  current = { fleet, publisher };
  await publisher.progress(PHASE_PUBLISHES, `${scenario}: publishing`);
  return { fleet, publisher, targets };
}

/** Stops publishing, reads each topic's final position and waits until every client reached it. */
async function finishRun(run: Run): Promise<Map<string, Position>> {
  await run.publisher.stop();
  const finals = new Map<string, Position>();
  for (const target of run.targets) {
    const answer = await cluster!.clusterApi(target.history, { channel: target.channel, limit: 0 });
    expect(answer.status).toBe(200);
    const { epoch, offset } = answer.json as Position;
    finals.set(target.channel, { epoch, offset });
  }
  const atFinal = (log: ChannelLog): boolean => {
    const final = finals.get(log.channel)!;
    return log.live && log.epoch === final.epoch && log.offset === final.offset;
  };
  await run.fleet
    .until(
      () => run.fleet.clients.every((client) => client.open && [...client.logs.values()].every(atFinal)),
      10_000,
      'every subscription reached its topic’s final position',
    )
    .catch((error: Error) => {
      const behind = run.fleet.clients.flatMap((client) =>
        [...client.logs.values()]
          .filter((log) => !atFinal(log))
          .map(
            (log) =>
              `${client.spec.name} ${log.channel} at ${log.epoch}:${log.offset}${log.live ? '' : ' (not live)'}`,
          ),
      );
      throw new Error(`${error.message}; final ${JSON.stringify([...finals])}; behind: ${behind.join(', ')}`);
    });
  run.fleet.stop();
  current = undefined;
  return finals;
}

// ---------------------------------------------------------------------------------------------
// What a subscription received, against what the publisher was told

/** `[3,4,5,9]` → `3-5, 9` */
function ranges(offsets: readonly number[]): string {
  const sorted = [...new Set(offsets)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}

const subject = (client: RecoveringClient, log: ChannelLog): string =>
  `${client.spec.name} on ${log.channel}${log.channel === client.spec.secondary ? ' (secondary)' : ''}`;

/** A resume's position must agree with itself: recovered across epochs or with a wrong `missed` is a lie. */
function positionProblems(position: PositionEntry): string[] {
  const { since } = position;
  if (!since || position.recovered !== true) return [];
  if (since.epoch !== position.epoch)
    return [`recovered: true from epoch ${since.epoch} into ${position.epoch} (session ${position.session})`];
  if (position.missed !== position.offset - since.offset)
    return [
      `missed ${position.missed} resuming from ${since.offset} to ${position.offset} (session ${position.session})`,
    ];
  return [];
}

/** Publications with the same content the publisher was answered for (seq at that offset). */
function contentProblems(log: ChannelLog, acks: readonly Ack[]): string[] {
  const seqAt = new Map(log.publications.map((p) => [`${p.epoch}:${p.offset}`, p.seq]));
  return acks
    .filter(
      (ack) => seqAt.has(`${ack.epoch}:${ack.offset}`) && seqAt.get(`${ack.epoch}:${ack.offset}`) !== ack.seq,
    )
    .slice(0, 3)
    .map(
      (ack) =>
        `offset ${ack.offset} carried seq ${String(seqAt.get(`${ack.epoch}:${ack.offset}`))}, acknowledged as seq ${ack.seq}`,
    );
}

/**
 * No fault lost history: the subscription received exactly offsets 1..N of the topic's one
 * epoch, in this order, each once (N its final offset, which covers every acknowledged
 * publication), and every resume was `recovered: true`.
 */
function exactlyOnceProblems(
  client: RecoveringClient,
  log: ChannelLog,
  acks: readonly Ack[],
  final: Position,
): string[] {
  const problems = [...log.violations];
  for (const position of log.positions) {
    if (position.recovered === false)
      problems.push(`recovered: false at ${position.epoch}:${position.offset} (session ${position.session})`);
    problems.push(...positionProblems(position));
  }
  const strays = log.publications.filter((p) => p.epoch !== final.epoch);
  if (strays.length > 0) problems.push(`${strays.length} publications outside epoch ${final.epoch}`);
  const offsets = log.publications.filter((p) => p.epoch === final.epoch).map((p) => p.offset);
  const counts = new Map<number, number>();
  for (const offset of offsets) counts.set(offset, (counts.get(offset) ?? 0) + 1);
  const missing: number[] = [];
  for (let offset = 1; offset <= final.offset; offset++) if (!counts.has(offset)) missing.push(offset);
  if (missing.length > 0) problems.push(`missing ${ranges(missing)}`);
  const duplicated = [...counts].filter(([, count]) => count > 1).map(([offset]) => offset);
  if (duplicated.length > 0) problems.push(`duplicated ${ranges(duplicated)}`);
  const beyond = offsets.filter((offset) => offset > final.offset);
  if (beyond.length > 0) problems.push(`beyond the final offset ${final.offset}: ${ranges(beyond)}`);
  const disorder = offsets.flatMap((offset, i) =>
    i > 0 && offset <= offsets[i - 1]! ? [`${offsets[i - 1]} then ${offset}`] : [],
  );
  if (disorder.length > 0) problems.push(`out of order: ${disorder.slice(0, 5).join(', ')}`);
  const unacknowledged = acks.filter((ack) => ack.epoch !== final.epoch || ack.offset > final.offset);
  if (unacknowledged.length > 0)
    problems.push(`acknowledged beyond the final position: ${JSON.stringify(unacknowledged.slice(0, 3))}`);
  problems.push(...contentProblems(log, acks));
  return problems.length === 0
    ? []
    : [`${subject(client, log)}: ${problems.join('; ')} [positions: ${log.describePositions()}]`];
}

/**
 * No silent loss. Walk what the subscription received, tracking where it stood (epoch, offset),
 * as the client does. A position with `recovered: false` received while standing at (e0, o0)
 * and saying (e1, o1) covers, in e0, every offset after o0 and, in e1, every offset up to o1
 * (within one epoch: offsets o0+1..o1). Then every acknowledged publication is either received
 * exactly once, or covered by such a position; within an epoch, offsets arrive increasing.
 */
function silentLossProblems(client: RecoveringClient, log: ChannelLog, acks: readonly Ack[]): string[] {
  const problems = [...log.violations];
  const covers: Array<(ack: Ack) => boolean> = [];
  const received = new Map<string, number>();
  const lastIn = new Map<string, number>();
  const disorder: string[] = [];
  let at: Position | undefined;
  for (const entry of log.entries) {
    if (entry.kind === 'position') {
      problems.push(...positionProblems(entry));
      if (entry.recovered === false && at) {
        const from = at;
        const to: Position = entry;
        covers.push((ack) =>
          from.epoch === to.epoch
            ? ack.epoch === to.epoch && ack.offset > from.offset && ack.offset <= to.offset
            : (ack.epoch === from.epoch && ack.offset > from.offset) ||
              (ack.epoch === to.epoch && ack.offset <= to.offset),
        );
      }
      at = { epoch: entry.epoch, offset: entry.offset };
      continue;
    }
    const id = `${entry.epoch}:${entry.offset}`;
    received.set(id, (received.get(id) ?? 0) + 1);
    const last = lastIn.get(entry.epoch);
    if (last !== undefined && entry.offset <= last)
      disorder.push(`${last} then ${entry.offset} in ${entry.epoch}`);
    lastIn.set(entry.epoch, entry.offset);
    at = { epoch: entry.epoch, offset: entry.offset };
  }
  const duplicated = [...received].filter(([, count]) => count > 1).map(([id]) => id);
  if (duplicated.length > 0) problems.push(`duplicated ${duplicated.slice(0, 10).join(', ')}`);
  if (disorder.length > 0) problems.push(`out of order: ${disorder.slice(0, 5).join(', ')}`);
  const lost = acks.filter(
    (ack) => !received.has(`${ack.epoch}:${ack.offset}`) && !covers.some((covered) => covered(ack)),
  );
  for (const epoch of new Set(lost.map((ack) => ack.epoch)))
    problems.push(
      `silently lost in ${epoch}: ${ranges(lost.filter((ack) => ack.epoch === epoch).map((ack) => ack.offset))}`,
    );
  problems.push(...contentProblems(log, acks));
  return problems.length === 0
    ? []
    : [`${subject(client, log)}: ${problems.join('; ')} [positions: ${log.describePositions()}]`];
}

function everySubscription(run: Run): Array<[RecoveringClient, ChannelLog]> {
  return run.fleet.clients.flatMap((client) =>
    [...client.logs.values()].map((log): [RecoveringClient, ChannelLog] => [client, log]),
  );
}

/** Every client's resumes: how many, and how many publications they caught up from history. */
function resumeSummary(run: Run): string {
  const resumes = everySubscription(run).flatMap(([, log]) => log.positions.filter((p) => p.since));
  const recovered = resumes.filter((p) => p.recovered === true);
  const caughtUp = recovered.reduce((sum, p) => sum + p.missed, 0);
  return `${resumes.length} resumes (${recovered.length} recovered, ${caughtUp} publications caught up from history)`;
}

/** The scenarios without history loss: exactly once, in order, every resume recovered. */
function expectExactlyOnce(run: Run, finals: Map<string, Position>): void {
  const problems = everySubscription(run).flatMap(([client, log]) =>
    exactlyOnceProblems(client, log, run.publisher.acked(log.channel), finals.get(log.channel)!),
  );
  expect(problems).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
}

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  cluster = await BalancedCluster.start({
    names: NODE_NAMES,
    // A generous window: these scenarios test the catch-up, not the retention limit.
    env: { DRAIN_GRACE_MS: String(DRAIN_GRACE_MS), HISTORY_SIZE: '1000', HEARTBEAT_INTERVAL_MS: '500' },
    checkIntervalMs: 150,
  });
});

afterEach(async () => {
  current?.fleet.stop();
  await current?.publisher.stop();
  current = undefined;
});

afterAll(async () => {
  await cluster?.stop();
});

it('rolling restart (SIGTERM, drain, start again): every acknowledged publication reaches every subscription exactly once, in order', async () => {
  const run = await startRun('rolling');
  for (const name of NODE_NAMES) {
    const old = cluster!.nodes.get(name)!;
    old.kill('SIGTERM');
    expect(await within(old.exited, DRAIN_GRACE_MS + 3000, `${name} exits after draining`)).toEqual({
      code: 0,
      signal: null,
    });
    await cluster!.waitUntilOutOfRotation(name);
    await cluster!.startGateway(name);
    await cluster!.waitUntilInRotation(name);
    await run.fleet.until(
      () => run.fleet.allLive,
      15_000,
      `after restarting ${name}: every subscription live`,
    );
    await run.publisher.progress(PHASE_PUBLISHES, `after restarting ${name}`);
  }
  const finals = await finishRun(run);

  expectExactlyOnce(run, finals);
  // Every client sat on a node that was restarted, so every subscription resumed at least once.
  const neverResumed = everySubscription(run)
    .filter(([, log]) => !log.positions.some((p) => p.since))
    .map(([client, log]) => subject(client, log));
  expect(neverResumed).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.closes).filter((code) => code !== 4000)).toEqual([]);
  process.stdout.write(`recovery, rolling restart: ${run.publisher.summary()}; ${resumeSummary(run)}\n`);
});

it('a gateway killed (SIGKILL): its clients see 1006, resume on the others, and still get everything exactly once, in order', async () => {
  const run = await startRun('crash');
  const servers = await cluster!.balancer.servers();
  const victim = servers.reduce((most, s) => (s.sessions > most.sessions ? s : most));
  expect(victim.sessions).toBeGreaterThan(0);
  const proc = cluster!.nodes.get(victim.name)!;
  proc.kill('SIGKILL');
  await proc.exited;
  await run.fleet.until(
    () => run.fleet.allLive,
    15_000,
    `after killing ${victim.name}: every subscription live`,
  );
  await run.publisher.progress(PHASE_PUBLISHES, `after killing ${victim.name}`);
  const crashed = run.fleet.clients.filter((client) => client.closes.includes(1006));
  expect(crashed.length).toBeGreaterThan(0);
  // Back to three nodes while publishing goes on (and for the next scenario).
  await cluster!.waitUntilOutOfRotation(victim.name);
  await cluster!.startGateway(victim.name);
  await cluster!.waitUntilInRotation(victim.name);
  await run.publisher.progress(PHASE_PUBLISHES, `after restarting ${victim.name}`);
  const finals = await finishRun(run);

  expectExactlyOnce(run, finals);
  process.stdout.write(
    `recovery, ${victim.name} killed (${crashed.length} clients saw 1006): ${run.publisher.summary()}; ${resumeSummary(run)}\n`,
  );
});

it('Redis restarted empty: every subscription gets every acknowledged publication or a recovered: false that covers it', async () => {
  const run = await startRun('redis-loss');
  const firstEpochs = new Map(run.targets.map((t) => [t.channel, run.publisher.acked(t.channel)[0]!.epoch]));
  const failedBefore = run.publisher.failed.length;
  await cluster!.redis.kill();
  await run.fleet.until(
    () => run.publisher.failed.length > failedBefore,
    10_000,
    'a publish refused while Redis is down',
  );
  await cluster!.redis.restart();
  for (const name of NODE_NAMES) await cluster!.waitUntilInRotation(name);
  const newEpoch = (ack: Ack, channel: string): boolean => ack.epoch !== firstEpochs.get(channel);
  await run.publisher.progress(PHASE_PUBLISHES, 'after the Redis restart, in a new epoch', newEpoch);
  await run.fleet.until(() => run.fleet.allLive, 15_000, 'after the Redis restart: every subscription live');
  const finals = await finishRun(run);

  // History was lost, so every topic is in a new epoch…
  for (const [channel, final] of finals) expect(final.epoch).not.toBe(firstEpochs.get(channel));
  // …and what a subscription did not get, it was told it may have lost.
  const problems = everySubscription(run).flatMap(([client, log]) =>
    silentLossProblems(client, log, run.publisher.acked(log.channel)),
  );
  expect(problems).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
  const toldLost = everySubscription(run).filter(([, log]) =>
    log.positions.some((p) => p.recovered === false),
  ).length;
  process.stdout.write(
    `recovery, Redis restarted empty: ${run.publisher.summary()}; ${resumeSummary(run)}; ` +
      `${toldLost} of ${everySubscription(run).length} subscriptions got recovered: false\n`,
  );
});
