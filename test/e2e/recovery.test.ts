import { Redis } from 'ioredis';
import { redisKeys } from '../../packages/core/src/redis/keys';
import {
  BalancedCluster,
  ranges,
  RecoveringFleet,
  request,
  startRedisCluster,
  startRedisSentinelGroup,
  startSwitchboardProcess,
  startTcpProxy,
  waitFor,
  within,
} from '@switchboard/harness';
import type { ChannelLog, PositionEntry, RecoveringClient, Waiters } from '@switchboard/harness';

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
 * - A Redis failover that loses acknowledged publications (Sentinel, and one `REDIS_URL` that
 *   follows the promotion as a managed Redis does): the same, and no (epoch, offset) is given to
 *   two publications; once it settled, the connection counts and presence members the account
 *   API and the cluster API report equal the sockets open.
 *
 * Needs `haproxy` (Debian package `haproxy`; .ci/run installs it). Without it the suite fails.
 */
jest.setTimeout(60_000);

const NODE_NAMES = ['gw1', 'gw2', 'gw3'] as const;
const DRAIN_GRACE_MS = 2000;
/** Per channel, whatever the answers take; three channels make 100 publishes a second. */
const PUBLISH_INTERVAL_MS = 30;
/** Unanswered publishes per channel before the publisher waits for one (a stalled cluster). */
const MAX_IN_FLIGHT = 32;
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
  private attempts = 0;
  private readonly latencies: number[] = [];
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
    this.stoppedAt ??= Date.now();
    await Promise.all(this.loops);
  }

  /** Publishes sent per second, answered or not. */
  get rate(): number {
    return this.attempts / (((this.stoppedAt ?? Date.now()) - this.startedAt) / 1000);
  }

  summary(): string {
    const acked = [...this.acks.values()].reduce((sum, list) => sum + list.length, 0);
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const latency = `answered in ${sorted[sorted.length >> 1]} ms median, ${sorted[Math.floor(sorted.length * 0.99)]} ms p99, ${sorted[sorted.length - 1]} ms max`;
    return `${this.attempts} publishes (${this.rate.toFixed(0)}/s), ${acked} acknowledged, ${this.failed.length} not; ${latency}`;
  }

  /**
   * Sends on a fixed schedule, catching up after a stall: a backend does not wait for one
   * publish's answer to send the next.
   */
  private async loop(target: Target): Promise<void> {
    const acks: Ack[] = [];
    this.acks.set(target.channel, acks);
    const inFlight = new Set<Promise<void>>();
    for (let seq = 1; this.running; seq++) {
      const due = this.startedAt + seq * PUBLISH_INTERVAL_MS;
      if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      const sent = this.publish(target, seq, acks).finally(() => inFlight.delete(sent));
      inFlight.add(sent);
      const pause = due - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause)); // pacing, not waiting
    }
    await Promise.all(inFlight);
  }

  private async publish(target: Target, seq: number, acks: Ack[]): Promise<void> {
    this.attempts++;
    const sentAt = Date.now();
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
    this.latencies.push(Date.now() - sentAt);
    this.waiters.changed();
  }
}

// ---------------------------------------------------------------------------------------------
// A scenario: fresh channels, twelve clients (sixteen subscriptions), the publisher.

interface Run {
  readonly fleet: RecoveringFleet;
  readonly publisher: Publisher;
  readonly targets: readonly Target[];
}

/**
 * `presence`: three more clients in the presence of the V4 and V3 channels (two V4 sockets of one
 * user, so the V4 member list deduplicates them, and one V3 member).
 */
async function startRun(scenario: string, options: { presence?: boolean } = {}): Promise<Run> {
  const v3 = `${scenario}-v3`;
  const v4 = `${scenario}-v4`;
  const secondary = `${scenario}-v4-secondary`;
  const fleet = new RecoveringFleet(cluster!);
  for (let i = 0; i < CLIENTS_PER_KIND; i++) {
    fleet.add({ name: `v3-${i}`, protocol: 'v3', channel: v3 });
    fleet.add({ name: `v4-${i}`, protocol: 'v4', channel: v4 });
    fleet.add({ name: `v4+secondary-${i}`, protocol: 'v4', channel: v4, secondary });
  }
  if (options.presence) {
    for (const [name, protocol, channel, user] of [
      ['presence-v4-ann-a', 'v4', v4, 'ann'],
      ['presence-v4-ann-b', 'v4', v4, 'ann'],
      ['presence-v3-bob', 'v3', v3, 'bob'],
    ] as const)
      fleet.add({ name, protocol, channel, presence: { uuid: `${scenario}-${name}`, user } });
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
// What the cluster reports about the sockets, against the sockets open

/** An account API process of the running cluster (port 0: its `ready` line names it); `stop` kills it. */
async function startAccountApi(own: BalancedCluster): Promise<string> {
  const proc = own.track(
    startSwitchboardProcess(['account-api'], { ...own.env, HOST: '127.0.0.1', ACCOUNT_PORT: '0' }),
  );
  const ready = await proc.waitForLog({ msg: 'ready' }, 15_000);
  return `http://127.0.0.1:${String(ready['port'])}`;
}

const listed = (items: Iterable<string>): string => JSON.stringify([...items].sort());

/**
 * The connection counts (account API `/api/connections` and `/connections/sum`) and presence
 * members (account API `/api/members`, cluster API `/api/v4/members` and `/api/members` per
 * channel) against the clients' open sockets: a primary counts while its socket is open, a
 * secondary once subscribed on it. Empty when they agree.
 */
async function reportedVsOpen(run: Run, accountUrl: string): Promise<string[]> {
  const own = cluster!;
  const open = run.fleet.clients.filter((client) => client.open);
  const counts = new Map<string, number>();
  for (const client of open)
    for (const log of client.logs.values())
      if (log.channel === client.spec.channel || log.live)
        counts.set(log.channel, (counts.get(log.channel) ?? 0) + 1);
  const present = open.filter((client) => client.spec.presence);
  const differences: string[] = [];
  const compare = (what: string, reported: Iterable<string>, expected: Iterable<string>): void => {
    if (listed(reported) !== listed(expected))
      differences.push(`${what}: ${listed(reported)}, sockets open: ${listed(expected)}`);
  };
  const headers = { key: own.key.key, secret: own.key.secret };
  const get = async (path: string): Promise<unknown> => {
    const answer = await request(`${accountUrl}${path}`, { headers, signal: AbortSignal.timeout(5000) });
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text.slice(0, 160)}`);
    return answer.json;
  };
  const connections = (await get('/api/connections')) as Array<{
    channel_id: string;
    connection_count: number;
  }>;
  compare(
    'account API /api/connections',
    connections.filter((c) => c.connection_count !== 0).map((c) => `${c.channel_id}=${c.connection_count}`),
    [...counts].map(([channel, n]) => `${channel}=${n}`),
  );
  const sum = ((await get('/api/connections/sum')) as { connection_count: number }).connection_count;
  const opened = [...counts.values()].reduce((a, b) => a + b, 0);
  if (sum !== opened)
    differences.push(`account API /api/connections/sum: ${sum}, subscriptions open: ${opened}`);
  const members = (await get('/api/members')) as Record<string, Array<{ uuid: string; user?: unknown }>>;
  compare(
    'account API /api/members',
    Object.entries(members).flatMap(([channel, list]) =>
      list.map((m) => `${channel}|${m.uuid}|${String(m.user)}`),
    ),
    present.map((c) => `${c.spec.channel}|${c.spec.presence!.uuid}|${c.spec.presence!.user}`),
  );
  for (const channel of new Set(
    run.fleet.clients.filter((c) => c.spec.presence).map((c) => c.spec.channel),
  )) {
    const protocol = run.fleet.clients.find((c) => c.spec.channel === channel)!.spec.protocol;
    const here = present.filter((c) => c.spec.channel === channel);
    const answer = await own.clusterApi(protocol === 'v4' ? '/api/v4/members' : '/api/members', { channel });
    if (answer.status !== 200) {
      differences.push(`cluster API members of ${channel}: ${answer.status} ${answer.text.slice(0, 160)}`);
      continue;
    }
    const body = answer.json as { members: unknown[]; count?: number };
    if (protocol === 'v4') {
      // Identities, each once (the user when set).
      const identities = new Set(here.map((c) => c.spec.presence!.user));
      compare(`cluster API /api/v4/members ${channel}`, body.members.map(String), identities);
      if (body.count !== identities.size)
        differences.push(
          `cluster API /api/v4/members ${channel}: count ${body.count}, identities ${identities.size}`,
        );
    } else
      compare(
        `cluster API /api/members ${channel}`,
        (body.members as Array<{ uuid: string; user?: unknown }>).map((m) => `${m.uuid}|${String(m.user)}`),
        here.map((c) => `${c.spec.presence!.uuid}|${c.spec.presence!.user}`),
      );
  }
  return differences;
}

/**
 * While Redis's replica is cut off: a presence client goes offline (its leave is written to the
 * primary alone) and a new one joins (so is its join); resolves once the account API lists the
 * joiner and no longer the leaver. The promoted replica knows neither change: only each gateway's
 * rewrite from its own sockets after the failover makes the members right again. The leaver
 * comes back (`goOnline`) once that was checked.
 */
async function presenceChangesDuringCut(
  run: Run,
  accountUrl: string,
): Promise<{ leaver: RecoveringClient; joiner: RecoveringClient }> {
  const leaver = run.fleet.clients.find((client) => client.spec.name === 'presence-v4-ann-b')!;
  const v4 = leaver.spec.channel;
  leaver.goOffline();
  const joiner = run.fleet.add({
    name: 'presence-v4-cy',
    protocol: 'v4',
    channel: v4,
    presence: { uuid: `${v4}-presence-v4-cy`, user: 'cy' },
  });
  const uuids = async (): Promise<string[]> => {
    const answer = await request(`${accountUrl}/api/members`, {
      headers: { key: cluster!.key.key, secret: cluster!.key.secret },
      signal: AbortSignal.timeout(5000),
    });
    const members = (answer.json ?? {}) as Record<string, Array<{ uuid: string }>>;
    return (members[v4] ?? []).map((m) => m.uuid);
  };
  await waitFor(
    'the joiner listed and the leaver gone (written to the primary alone)',
    async () => {
      const listed = await uuids();
      return (
        joiner.live &&
        listed.includes(joiner.spec.presence!.uuid) &&
        !listed.includes(leaver.spec.presence!.uuid)
      );
    },
    10_000,
    50,
  );
  return { leaver, joiner };
}

/**
 * The acknowledged publications a subscription is owed: those after its first position (a client
 * that joined late is owed nothing published before it subscribed).
 */
function owed(log: ChannelLog, acks: readonly Ack[]): Ack[] {
  const first = log.positions[0];
  return first ? acks.filter((ack) => ack.epoch !== first.epoch || ack.offset > first.offset) : [...acks];
}

/** Waits (polling, 15 s at most) until the counts and members reported equal the sockets open. */
async function expectConverged(run: Run, accountUrl: string): Promise<void> {
  let differences: string[] = [];
  await waitFor(
    'the counts and members reported equal to the sockets open',
    async () =>
      (differences = await reportedVsOpen(run, accountUrl).catch((error: Error) => [error.message]))
        .length === 0,
    15_000,
    100,
  ).catch((error: Error) => {
    throw new Error(`${error.message}: ${differences.join('; ')}`);
  });
}

// ---------------------------------------------------------------------------------------------
// What a subscription received, against what the publisher was told

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

/** `problems` and wrong contents, as one line naming the subscription and listing its positions. */
function findings(
  client: RecoveringClient,
  log: ChannelLog,
  acks: readonly Ack[],
  problems: string[],
): string[] {
  const all = [...problems, ...contentProblems(log, acks)];
  return all.length === 0
    ? []
    : [`${subject(client, log)}: ${all.join('; ')} [positions: ${log.describePositions()}]`];
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
  return findings(client, log, acks, problems);
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
  return findings(client, log, acks, problems);
}

function everySubscription(run: Run): Array<[RecoveringClient, ChannelLog]> {
  return run.fleet.clients.flatMap((client) =>
    [...client.logs.values()].map((log): [RecoveringClient, ChannelLog] => [client, log]),
  );
}

const resumes = (run: Run): PositionEntry[] =>
  everySubscription(run).flatMap(([, log]) => log.positions.filter((p) => p.since));

/** Publications the resumes said they missed and replayed from history. */
const caughtUp = (run: Run): number =>
  resumes(run).reduce((sum, p) => sum + (p.recovered === true ? p.missed : 0), 0);

/** Every client's resumes: how many, and how many publications they caught up from history. */
function resumeSummary(run: Run): string {
  const recovered = resumes(run).filter((p) => p.recovered === true).length;
  const failed = run.fleet.clients.flatMap((client) => client.failedAttempts);
  const codes = [...new Set(failed)].join(', ');
  return (
    `${resumes(run).length} resumes (${recovered} recovered, ${caughtUp(run)} publications caught up from history), ` +
    `${failed.length} connection attempts failed before opening${codes ? ` (closes ${codes})` : ''}, ` +
    `${run.fleet.clients.flatMap((client) => client.subscribeErrors).length} secondary subscribes refused`
  );
}

/** What the scenario did, on the test's output; then that the publisher kept its pace. */
function report(run: Run, title: string, extra = ''): void {
  process.stdout.write(`recovery, ${title}: ${run.publisher.summary()}; ${resumeSummary(run)}${extra}\n`);
  expect(run.publisher.rate).toBeGreaterThanOrEqual(50);
}

/** The scenarios without history loss: exactly once, in order, every resume recovered. */
function expectExactlyOnce(run: Run, finals: Map<string, Position>): void {
  const problems = everySubscription(run).flatMap(([client, log]) =>
    exactlyOnceProblems(client, log, run.publisher.acked(log.channel), finals.get(log.channel)!),
  );
  expect(problems).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
  // The fault made clients miss publications while they reconnected, and history made up for them.
  expect(caughtUp(run)).toBeGreaterThan(0);
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
  const phases: string[] = [];
  for (const name of NODE_NAMES) {
    const old = cluster!.nodes.get(name)!;
    const stoppedAt = Date.now();
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
    phases.push(`${name} back in ${Date.now() - stoppedAt} ms`);
    await run.publisher.progress(PHASE_PUBLISHES, `after restarting ${name}`);
  }
  const finals = await finishRun(run);
  report(run, `rolling restart (${phases.join(', ')})`);

  expectExactlyOnce(run, finals);
  // Every client sat on a node that was restarted, so every subscription resumed at least once.
  const neverResumed = everySubscription(run)
    .filter(([, log]) => !log.positions.some((p) => p.since))
    .map(([client, log]) => subject(client, log));
  expect(neverResumed).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.closes).filter((code) => code !== 4000)).toEqual([]);
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
  report(run, `${victim.name} killed (${crashed.length} clients saw 1006)`);

  expectExactlyOnce(run, finals);
});

it('Redis restarted empty: every subscription gets every acknowledged publication or a recovered: false that covers it', async () => {
  const run = await startRun('redis-loss');
  const firstEpochs = new Map(run.targets.map((t) => [t.channel, run.publisher.acked(t.channel)[0]!.epoch]));
  // One client of each kind loses its network and misses what is published next, in the old epoch.
  const offline = run.fleet.clients.filter((client) => client.spec.name.endsWith('-0'));
  for (const client of offline) client.goOffline();
  await run.publisher.progress(PHASE_PUBLISHES, 'while some clients are offline');
  const failedBefore = run.publisher.failed.length;
  await cluster!.redis.kill();
  await run.fleet.until(
    () => run.publisher.failed.length > failedBefore,
    10_000,
    'a publish refused while Redis is down',
  );
  // They come back while Redis is down: refused (4013, or 503 at the balancer) until it is back.
  for (const client of offline) client.goOnline();
  await cluster!.redis.restart();
  for (const name of NODE_NAMES) await cluster!.waitUntilInRotation(name);
  const newEpoch = (ack: Ack, channel: string): boolean => ack.epoch !== firstEpochs.get(channel);
  await run.publisher.progress(PHASE_PUBLISHES, 'after the Redis restart, in a new epoch', newEpoch);
  await run.fleet.until(() => run.fleet.allLive, 15_000, 'after the Redis restart: every subscription live');
  const finals = await finishRun(run);
  const toldLost = everySubscription(run).filter(([, log]) =>
    log.positions.some((p) => p.recovered === false),
  ).length;
  report(
    run,
    'Redis restarted empty',
    `; ${toldLost} of ${everySubscription(run).length} subscriptions got recovered: false`,
  );

  // History was lost, so every topic is in a new epoch…
  for (const [channel, final] of finals) expect(final.epoch).not.toBe(firstEpochs.get(channel));
  // …and what a subscription did not get, it was told it may have lost.
  const problems = everySubscription(run).flatMap(([client, log]) =>
    silentLossProblems(client, log, run.publisher.acked(log.channel)),
  );
  expect(problems).toEqual([]);
  expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
  // Those that were offline resumed from the old epoch: they were told, whatever else happened.
  const notTold = offline.flatMap((client) =>
    [...client.logs.values()]
      .filter(
        (log) =>
          !log.positions.some(
            (p) => p.recovered === false && p.since?.epoch === firstEpochs.get(log.channel),
          ),
      )
      .map((log) => `${subject(client, log)} [positions: ${log.describePositions()}]`),
  );
  expect(notTold).toEqual([]);
});

/**
 * A primary, a replica and three sentinels; two gateways of their own behind HAProxy (the suite's
 * cluster is set aside meanwhile). The replica is cut off (its link killed on the primary, the
 * process stopped so it cannot resync), the publisher's next publications are acknowledged by the
 * primary alone, the primary is SIGKILLed and the sentinels promote the replica, which never saw
 * them (a marker key written last shows it).
 */
async function failoverScenario(mode: 'sentinel' | 'single-url'): Promise<void> {
  const group = await startRedisSentinelGroup();
  const proxy = mode === 'single-url' ? await startTcpProxy(group.primary.port) : undefined;
  const suiteCluster = cluster;
  let own: BalancedCluster | undefined;
  try {
    own = await BalancedCluster.start({
      names: ['fo1', 'fo2'],
      redisEnv: proxy
        ? { REDIS_URL: `redis://127.0.0.1:${proxy.port}` }
        : { REDIS_SENTINELS: group.sentinelsEnv, REDIS_SENTINEL_NAME: group.name },
      env: { HISTORY_SIZE: '1000', HEARTBEAT_INTERVAL_MS: '500' },
      checkIntervalMs: 150,
    });
    cluster = own;
    const accountUrl = await startAccountApi(own);
    const run = await startRun(`failover-${mode}`, { presence: true });
    const firstEpochs = new Map(
      run.targets.map((t) => [t.channel, run.publisher.acked(t.channel)[0]!.epoch]),
    );
    // One client of each kind loses its network and resumes after the failover, from the old epoch.
    const offline = run.fleet.clients.filter((client) => client.spec.name.endsWith('-0'));
    const primary = new Redis(group.primary.port, '127.0.0.1');
    let presence: { leaver: RecoveringClient } | undefined;
    try {
      expect(await primary.call('WAIT', '1', '5000')).toBe(1);
      for (const client of offline) client.goOffline();
      group.replica.freeze();
      await primary.call('CLIENT', 'KILL', 'TYPE', 'replica');
      presence = await presenceChangesDuringCut(run, accountUrl);
      await run.publisher.progress(PHASE_PUBLISHES, 'while the replica is cut off');
      await primary.set('burst-marker', '1');
    } finally {
      primary.disconnect();
    }
    await group.primary.kill();
    group.replica.thaw();
    await waitFor(
      'the sentinels promote the replica',
      async () => (await group.masterPort()) === group.replica.port,
      30_000,
    );
    proxy?.retarget(group.replica.port);
    const replica = new Redis(group.replica.port, '127.0.0.1');
    try {
      expect(await replica.get('burst-marker')).toBeNull();
      for (const client of offline) client.goOnline();
      for (const name of own.names) await own.waitUntilInRotation(name);
      const newEpoch = (ack: Ack, channel: string): boolean => ack.epoch !== firstEpochs.get(channel);
      await run.publisher.progress(PHASE_PUBLISHES, 'after the failover, in a new epoch', newEpoch);
      await run.fleet.until(
        () => run.fleet.clients.every((client) => client === presence!.leaver || client.live),
        15_000,
        'after the failover: every subscription live (but the presence leaver’s)',
      );
      // Counts and members, rewritten on the new master from each gateway's sockets, equal them.
      await expectConverged(run, accountUrl);
    } finally {
      replica.disconnect();
    }
    presence!.leaver.goOnline();
    const finals = await finishRun(run);
    report(run, `failover (${mode})`);
    // Those that were offline resumed from the old epoch: they were told, whatever else happened.
    const notTold = offline.flatMap((client) =>
      [...client.logs.values()]
        .filter(
          (log) =>
            !log.positions.some(
              (p) => p.recovered === false && p.since?.epoch === firstEpochs.get(log.channel),
            ),
        )
        .map((log) => `${subject(client, log)} [positions: ${log.describePositions()}]`),
    );
    expect(notTold).toEqual([]);
    for (const [channel, final] of finals) expect(final.epoch).not.toBe(firstEpochs.get(channel));
    // Every acknowledged publication received exactly once or covered by a recovered: false, and
    // no two publications under one (epoch, offset) (they would count as one received twice).
    const problems = everySubscription(run).flatMap(([client, log]) =>
      silentLossProblems(client, log, owed(log, run.publisher.acked(log.channel))),
    );
    expect(problems).toEqual([]);
    expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
  } finally {
    cluster = suiteCluster;
    await own?.stop();
    await proxy?.close();
    await group.stop();
  }
}

it('Redis failover through Sentinel that loses acknowledged publications: no position given twice, no silent loss', async () => {
  await failoverScenario('sentinel');
}, 90_000);

it('Redis failover behind one REDIS_URL that follows the promotion (a managed Redis): the same', async () => {
  await failoverScenario('single-url');
}, 90_000);

/**
 * The same through a master failover of a Redis Cluster of three masters with one replica each:
 * the master of the V4 channel's slot loses its replica's link, acknowledges a burst alone, is
 * SIGKILLed, and the cluster promotes the replica. Topics of the other masters go on in their
 * epochs; the failed master's topics start new ones.
 */
it('Redis Cluster master failover that loses acknowledged publications: no position given twice, no silent loss', async () => {
  const redisCluster = await startRedisCluster({ replicas: 1 });
  const suiteCluster = cluster;
  let own: BalancedCluster | undefined;
  const node = (port: number): Redis =>
    new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    own = await BalancedCluster.start({
      names: ['fo1', 'fo2'],
      redisEnv: { REDIS_CLUSTER_NODES: redisCluster.nodesEnv },
      env: { HISTORY_SIZE: '1000', HEARTBEAT_INTERVAL_MS: '500' },
      checkIntervalMs: 150,
    });
    cluster = own;
    const accountUrl = await startAccountApi(own);
    const run = await startRun('failover-cluster', { presence: true });
    const firstEpochs = new Map(
      run.targets.map((t) => [t.channel, run.publisher.acked(t.channel)[0]!.epoch]),
    );
    const keys = redisKeys(own.env.REDIS_PREFIX!);
    const v4 = run.targets[1]!.channel;
    const any = node(redisCluster.nodes[0]!.port);
    await any.connect();
    const slotOf = async (channel: string, protocol: 'v3' | 'v4'): Promise<number> =>
      Number(
        await any.call('CLUSTER', 'KEYSLOT', keys.historyStream({ key: own!.key.key, protocol, channel })),
      );
    const rows = ((await any.call('CLUSTER', 'NODES')) as string)
      .trim()
      .split('\n')
      .map((line) => line.split(' '));
    const owns = (row: string[], slot: number): boolean =>
      row.slice(8).some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return slot >= from! && slot <= to!;
      });
    const slot = await slotOf(v4, 'v4');
    const owner = rows.find((row) => row[2]!.includes('master') && owns(row, slot))!;
    const portOf = (row: string[]): number => Number(row[1]!.split('@')[0]!.split(':')[1]);
    let replicaRow: string[] | undefined;
    await waitFor(
      'the replica of the channel’s master known',
      async () => {
        const table = ((await any.call('CLUSTER', 'NODES')) as string).trim().split('\n');
        replicaRow = table.map((line) => line.split(' ')).find((row) => row[3] === owner[0]);
        return replicaRow !== undefined;
      },
      15_000,
    );
    // The topics whose history lives on the master that fails.
    const failing = new Set<string>();
    for (const target of run.targets) {
      const protocol = target.publish.includes('/v4/') ? 'v4' : 'v3';
      if (owns(owner, await slotOf(target.channel, protocol))) failing.add(target.channel);
    }
    any.disconnect();
    const masterPort = portOf(owner);
    const replicaPort = portOf(replicaRow!);
    const master = node(masterPort);
    const replica = node(replicaPort);
    let presence: { leaver: RecoveringClient } | undefined;
    replica.on('error', () => undefined);
    try {
      await master.connect();
      await replica.connect();
      await waitFor(
        'the replica in sync',
        async () => ((await replica.info('replication')) as string).includes('master_link_status:up'),
        15_000,
      );
      expect(await master.call('WAIT', '1', '5000')).toBe(1);
      redisCluster.signal(replicaPort, 'SIGSTOP');
      await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
      presence = await presenceChangesDuringCut(run, accountUrl);
      await run.publisher.progress(PHASE_PUBLISHES, 'while the replica is cut off');
      const marker = `marker{${own.key.key}|v4|${v4}}`;
      await master.set(marker, '1');
      master.disconnect();
      redisCluster.signal(masterPort, 'SIGKILL');
      redisCluster.signal(replicaPort, 'SIGCONT');
      await waitFor(
        'the cluster promotes the replica',
        async () => ((await replica.info('replication').catch(() => '')) as string).includes('role:master'),
        30_000,
      );
      expect(await replica.call('GET', marker)).toBeNull();
    } finally {
      master.disconnect();
      replica.disconnect();
    }
    for (const name of own.names) await own.waitUntilInRotation(name);
    const newEpoch = (ack: Ack, channel: string): boolean =>
      !failing.has(channel) || ack.epoch !== firstEpochs.get(channel);
    await run.publisher.progress(PHASE_PUBLISHES, 'after the failover', newEpoch);
    await run.fleet.until(
      () => run.fleet.clients.every((client) => client === presence!.leaver || client.live),
      15_000,
      'after the failover: every subscription live (but the presence leaver’s)',
    );
    await expectConverged(run, accountUrl);
    presence!.leaver.goOnline();
    const finals = await finishRun(run);
    report(run, 'Redis Cluster master failover', `; topics on the failed master: ${[...failing].join(', ')}`);
    for (const channel of failing) expect(finals.get(channel)!.epoch).not.toBe(firstEpochs.get(channel));
    const problems = everySubscription(run).flatMap(([client, log]) =>
      silentLossProblems(client, log, owed(log, run.publisher.acked(log.channel))),
    );
    expect(problems).toEqual([]);
    expect(run.fleet.clients.flatMap((client) => client.finalCloses)).toEqual([]);
  } finally {
    cluster = suiteCluster;
    await own?.stop();
    await redisCluster.stop();
  }
}, 90_000);
