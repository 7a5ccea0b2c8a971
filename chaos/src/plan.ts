import { Random } from './random';

/**
 * What a chaos run does, drawn from its seed alone: the initial clients and a schedule of faults
 * (gateway SIGKILLs and SIGTERMs, Redis restarts, client churn). The same seed and duration give
 * the same plan on every machine; how the cluster reacts in between is what the run observes.
 */

export const GATEWAYS = ['gw1', 'gw2', 'gw3'] as const;
export type Gateway = (typeof GATEWAYS)[number];

export type Protocol = 'v3' | 'v4';

/** One topic the publisher publishes to (a channel of one protocol world). */
export interface Topic {
  readonly protocol: Protocol;
  readonly channel: string;
}

/** Every topic of the run: each is published to at a steady rate, and clients subscribe to them. */
export const TOPICS: readonly Topic[] = [
  { protocol: 'v4', channel: 'chaos-a' },
  { protocol: 'v4', channel: 'chaos-b' },
  { protocol: 'v4', channel: 'presence-lobby' },
  // The same channel name in the V3 world: counts add both versions up, members list both.
  { protocol: 'v3', channel: 'chaos-a' },
  { protocol: 'v3', channel: 'presence-v3' },
];

const channelsOf = (protocol: Protocol): string[] =>
  TOPICS.filter((t) => t.protocol === protocol).map((t) => t.channel);

/** Presence identities: fewer than clients, so one user is often connected several times. */
const USERS = ['ann', 'bob', 'cho', 'dev', 'eli', 'fay'];

export interface Subscription {
  readonly channel: string;
  /** In the channel's presence (always for `presence-…` channels). */
  readonly presence: boolean;
}

/** One client: the first subscription is the socket's (V4: primary); V3 clients have one. */
export interface ClientSpec {
  readonly name: string;
  readonly protocol: 3 | 4;
  readonly user: string | undefined;
  readonly subscriptions: readonly Subscription[];
}

export type ChaosEvent =
  | { readonly at: number; readonly kind: 'kill-gateway'; readonly gateway: Gateway; readonly downMs: number }
  | {
      readonly at: number;
      readonly kind: 'term-gateway';
      readonly gateway: Gateway;
      readonly downMs: number;
      /** SIGKILL this long after the SIGTERM if it is still draining (a supervisor's grace period running out). */
      readonly killAfterMs: number | undefined;
    }
  | { readonly at: number; readonly kind: 'restart-redis'; readonly downMs: number }
  /** Failover runs only: SIGKILL the primary, Sentinel promotes its replica. */
  | { readonly at: number; readonly kind: 'failover-redis' }
  | {
      readonly at: number;
      readonly kind: 'churn';
      readonly close: readonly string[];
      readonly open: readonly ClientSpec[];
    };

export type FaultKind = ChaosEvent['kind'];

export interface PlanTiming {
  /** The gateways' DRAIN_GRACE_MS: a SIGTERMed gateway may take that long to exit. */
  readonly drainGraceMs: number;
  /** Allowed for a gateway to start and enter the balancer's rotation, or Redis to come back. */
  readonly restartAllowanceMs: number;
}

export interface ChaosPlan {
  readonly seed: number;
  readonly durationMs: number;
  readonly initialClients: readonly ClientSpec[];
  readonly events: readonly ChaosEvent[];
}

const CLIENTS_INITIAL = 36;
const CLIENTS_MIN = 26;
const CLIENTS_MAX = 46;
/** Gateways down (or restarting) at once, at most: one always serves. */
const MAX_GATEWAYS_DOWN = 2;
const WEIGHTS: ReadonlyArray<readonly [FaultKind, number]> = [
  ['kill-gateway', 3],
  ['term-gateway', 3],
  ['restart-redis', 1.5],
  ['churn', 3.5],
];

/** A failover: the sentinels' 1 s, the election, and the old primary back as a replica in sync. */
export const FAILOVER_ALLOWANCE_MS = 15_000;

/**
 * `failover`: the run's Redis is a primary with a replica and sentinels, and the schedule draws
 * `failover-redis` where it would draw `restart-redis` (a run without it draws exactly the plans
 * it always did for a seed). A restart of the master alone is no fault of that topology: the
 * sentinels may promote the replica meanwhile and briefly know two masters.
 */
export function planChaos(
  seed: number,
  durationMs: number,
  timing: PlanTiming,
  options: { readonly failover?: boolean } = {},
): ChaosPlan {
  const weights: ReadonlyArray<readonly [FaultKind, number]> = options.failover
    ? WEIGHTS.map(([kind, weight]) => [kind === 'restart-redis' ? 'failover-redis' : kind, weight] as const)
    : WEIGHTS;
  const rng = new Random(seed);
  let counter = 0;
  const newClient = (): ClientSpec => {
    const name = `c${++counter}`;
    if (rng.chance(0.25)) {
      const channel = rng.pick(channelsOf('v3'));
      const presence = channel.startsWith('presence-') || rng.chance(0.4);
      const user = presence && rng.chance(0.8) ? rng.pick(USERS) : undefined;
      return { name, protocol: 3, user, subscriptions: [{ channel, presence }] };
    }
    const channels = rng.sample(channelsOf('v4'), rng.int(1, 3));
    const subscriptions = channels.map((channel) => ({
      channel,
      presence: channel.startsWith('presence-') || rng.chance(0.3),
    }));
    return { name, protocol: 4, user: rng.chance(0.8) ? rng.pick(USERS) : undefined, subscriptions };
  };

  const initialClients = Array.from({ length: CLIENTS_INITIAL }, newClient);
  const open = initialClients.map((client) => client.name);
  const events: ChaosEvent[] = [];
  const busyUntil = new Map<Gateway, number>(GATEWAYS.map((g) => [g, 0]));
  let redisBusyUntil = 0;
  // Every kind once early (in a shuffled order), then by weight: a short run still has them all.
  const deck = rng.sample(
    weights.map(([kind]) => kind),
    weights.length,
  );
  for (let at = rng.int(2000, 4000); at < durationMs; at += rng.int(1500, 4500)) {
    const wanted = deck.shift() ?? rng.weighted(weights);
    const free = GATEWAYS.filter((g) => busyUntil.get(g)! <= at);
    const down = GATEWAYS.length - free.length;
    let event: ChaosEvent | undefined;
    if (
      (wanted === 'kill-gateway' || wanted === 'term-gateway') &&
      free.length > 0 &&
      down < MAX_GATEWAYS_DOWN
    ) {
      const gateway = rng.pick(free);
      // Up to twice NODE_TIMEOUT_MS: some restarts come after the survivors declared the node dead.
      const downMs = rng.int(300, 6000);
      const end =
        at + (wanted === 'term-gateway' ? timing.drainGraceMs : 0) + downMs + timing.restartAllowanceMs;
      const killAfterMs = wanted === 'term-gateway' && rng.chance(0.3) ? rng.int(10, 300) : undefined;
      if (end <= durationMs) {
        event =
          wanted === 'term-gateway'
            ? { at, kind: wanted, gateway, downMs, killAfterMs }
            : { at, kind: wanted, gateway, downMs };
        busyUntil.set(gateway, end);
      }
    } else if (wanted === 'restart-redis' && redisBusyUntil <= at) {
      const downMs = rng.int(200, 2500);
      const end = at + downMs + timing.restartAllowanceMs;
      if (end <= durationMs) {
        event = { at, kind: wanted, downMs };
        redisBusyUntil = end;
      }
    }
    if (wanted === 'failover-redis' && redisBusyUntil <= at) {
      const end = at + FAILOVER_ALLOWANCE_MS;
      if (end <= durationMs) {
        event = { at, kind: wanted };
        redisBusyUntil = end;
      }
    }
    if (!event) {
      // Churn keeps the population between CLIENTS_MIN and CLIENTS_MAX.
      const closeCount = Math.max(0, Math.min(rng.int(1, 4), open.length - (CLIENTS_MIN - 4)));
      const close = rng.sample([...open].sort(), closeCount);
      for (const name of close) open.splice(open.indexOf(name), 1);
      const openCount = Math.min(
        Math.max(rng.int(1, 4), CLIENTS_MIN - open.length),
        CLIENTS_MAX - open.length,
      );
      const added = Array.from({ length: openCount }, newClient);
      open.push(...added.map((client) => client.name));
      event = { at, kind: 'churn', close, open: added };
    }
    events.push(event);
  }
  return { seed, durationMs, initialClients, events };
}

export function describeClient(spec: ClientSpec): string {
  const subs = spec.subscriptions.map((s) => `${s.channel}${s.presence ? '+presence' : ''}`).join(',');
  return `${spec.name}(v${spec.protocol} ${subs}${spec.user ? ` as ${spec.user}` : ''})`;
}

export function describeEvent(event: ChaosEvent): string {
  switch (event.kind) {
    case 'kill-gateway':
      return `SIGKILL ${event.gateway}, restart after ${event.downMs} ms`;
    case 'term-gateway':
      return `SIGTERM ${event.gateway} (drain)${
        event.killAfterMs === undefined ? '' : `, SIGKILL ${event.killAfterMs} ms later if still draining`
      }, restart ${event.downMs} ms after it exits`;
    case 'restart-redis':
      return `Redis SIGKILL, restarted empty after ${event.downMs} ms`;
    case 'failover-redis':
      return 'Redis primary SIGKILL, Sentinel promotes its replica; the old primary returns as a replica';
    case 'churn':
      return `churn: close ${event.close.join(' ') || 'none'}; open ${event.open.map(describeClient).join(' ') || 'none'}`;
  }
}
