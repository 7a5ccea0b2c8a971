import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import { Cluster, Redis } from 'ioredis';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import type { RedisTarget } from '../config/load';
import { EngineUnavailableError } from '../errors';
import type { Logger } from '../logger';
import { clusterHealth, standaloneHealth } from './connection-health';
import { evalFlat } from './flat-command';
import type { ConnectionHealth } from './connection-health';

export type { RedisClient } from './flat-command';
import type { RedisClient } from './flat-command';

export interface RedisClients {
  readonly target: RedisTarget;
  /** Commands and scripts; rejects at once while disconnected (no offline queue). */
  readonly command: RedisClient;
  /** Pub/sub only: SUBSCRIBE on standalone, SSUBSCRIBE on a cluster. */
  readonly subscriber: RedisClient;
  /** Whether `command` can carry calls now; `guard` fails calls at once while it cannot. */
  readonly health: ConnectionHealth;
  /** Resolves once `command` is up (for start-up and tests; never rejects). */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Health of each command connection, consulted by `guard`. */
const healthOf = new WeakMap<RedisClient, ConnectionHealth>();

/** Reconnect forever with a capped backoff: a gateway outlives any Redis outage. */
export const retryDelay = (times: number): number => Math.min(times * 100, 1000);

/** How often a cluster client reads the slot table again (a failover moves slots). */
const SLOTS_REFRESH_MS = 1000;

/** A command that gets no reply in this time fails (a half-open connection never answers). */
const COMMAND_TIMEOUT_MS = 5000;

export function createRedisClients(target: RedisTarget, logger: Logger): RedisClients {
  const log = logger.child({ component: 'redis' });
  const onError = (role: string) => (error: Error) =>
    log.debug({ err: error, role }, 'Redis connection error');
  let command: RedisClient;
  let subscriber: RedisClient;
  if (target.kind !== 'cluster') {
    const options: RedisOptions = {
      retryStrategy: retryDelay,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      ...(target.kind === 'sentinel' ? sentinelOptions(target) : {}),
    };
    const url = target.kind === 'standalone' ? target.url : undefined;
    const open = (more: RedisOptions): Redis =>
      url === undefined ? new Redis({ ...options, ...more }) : new Redis(url, { ...options, ...more });
    command = open({ connectionName: 'sb-command' });
    // Subscriptions are restored by RedisBroker itself on every `ready`, so it can track them.
    subscriber = open({ connectionName: 'sb-subscriber', autoResubscribe: false });
  } else {
    // The offline queue stays on: ioredis connects to each master lazily, and without the queue
    // the calls made while that connection is being established are rejected and retried later,
    // out of order. `guard` fails calls fast while the cluster as a whole is not ready instead.
    // The slot table is read again every second: after a master fails and its replica is
    // promoted, nothing else would tell ioredis (calls are refused while the cluster is down, so
    // no MOVED reply comes), and the sharded subscriptions move to the new master with it.
    const options: ClusterOptions = {
      clusterRetryStrategy: retryDelay,
      slotsRefreshInterval: SLOTS_REFRESH_MS,
      redisOptions: { commandTimeout: COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 1 },
    };
    command = new Cluster(target.nodes, options);
    // The command timeout on the subscriber's connections too: ioredis answers an SSUBSCRIBE
    // that a master refuses with MOVED (its slot moved: a failover, a cluster restarted with
    // another master for it, a resharding) by reading the slot table again and subscribing the
    // channel on the new master itself, but never settles the call. Unsettled, it held the
    // gateway's repair after an outage for good, and with it the resync of every topic stream
    // (docs/reliability.md); timed out, the subscribe fails and is tried again.
    subscriber = new Cluster(target.nodes, {
      ...options,
      shardedSubscribers: true,
      redisOptions: { maxRetriesPerRequest: 1, commandTimeout: COMMAND_TIMEOUT_MS },
    });
    subscriber.on('node error', onError('subscriber-node'));
    command.on('node error', onError('command-node'));
  }
  command.on('error', onError('command'));
  subscriber.on('error', onError('subscriber'));
  const health = command instanceof Cluster ? clusterHealth(command) : standaloneHealth(command);
  healthOf.set(command, health);
  return {
    target,
    command,
    subscriber,
    health,
    up: () =>
      health.isUp()
        ? Promise.resolve()
        : new Promise<void>((resolve) => health.onChange((isUp) => isUp && resolve())),
    close: async () => {
      health.stop();
      await Promise.all([command, subscriber].map((client) => quit(client)));
    },
  };
}

/**
 * ioredis' own Sentinel support: each connection asks the sentinels for the master, checks the
 * server's role once connected, and on any loss asks again, so a failover is followed without a
 * restart. The connections to a failed primary drop (a dead process closes them; Sentinel
 * disconnects the clients of every server it reconfigures; an unreachable one fails the command
 * timeout). ioredis' `failoverDetector` is not used: its sentinel connections outlive `quit` and
 * keep a closed process's event loop alive.
 */
function sentinelOptions(target: Extract<RedisTarget, { kind: 'sentinel' }>): RedisOptions {
  return {
    sentinels: target.sentinels,
    name: target.name,
    role: 'master',
    sentinelRetryStrategy: retryDelay,
    ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
  };
}

async function quit(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  await client.quit().catch(() => client.disconnect());
}

/**
 * Runs a Redis call on `client`; any failure is `SB_ENGINE_UNAVAILABLE` (503, docs/errors.md). A
 * client that is not connected fails at once instead of queueing the call: nothing was carried
 * out. A call that was sent and got no answer (timed out, or the connection dropped under it) is
 * reported unconfirmed: Redis may have run it.
 *
 * The call's writes are held to the end of the turn (`coalesceWrites`) unless `coalesce` is
 * false: then they leave at once (a lone command on a quiet connection gains nothing by waiting).
 */
export function guard<T>(client: RedisClient, call: () => Promise<T>, coalesce = true): Promise<T> {
  const up = healthOf.get(client)?.isUp() ?? client.status === 'ready';
  if (!up) {
    reportCommandError(client);
    return Promise.reject(
      new EngineUnavailableError(new Error(`Redis connection is ${client.status}, not usable`)),
    );
  }
  if (coalesce) coalesceWrites(client);
  // Not `async`: the call's own promise is handed on with one `then`, the fewest promise steps
  // between Redis' answer and the caller (every publish passes here).
  let calling: Promise<T>;
  try {
    calling = call();
  } catch (error) {
    return Promise.reject(unavailable(client, error));
  }
  return calling.then(undefined, (error: unknown) => {
    throw unavailable(client, error);
  });
}

function unavailable(client: RedisClient, error: unknown): EngineUnavailableError {
  reportCommandError(client);
  if (error instanceof EngineUnavailableError) return error;
  return new EngineUnavailableError(error, isUnanswered(error));
}

/**
 * The generation of the master that runs a command on `key` through `client` now
 * (`ConnectionHealth.generation`). Call it inside `guard`'s call, so the key is built on the
 * same turn the command leaves on the connection it was read from. Throws while that connection
 * is not identified: the call fails as if Redis were unreachable, and nothing was carried out.
 */
export function serverGeneration(client: RedisClient, key: string): string {
  const generation = healthOf.get(client)?.generation(key);
  if (generation === undefined) throw new Error('the Redis master for this key is not identified yet');
  return generation;
}

/** ioredis' rejections of a command it sent and never got a reply for. */
const UNANSWERED = new Set(['Command timed out', 'Connection is closed.']);

const isUnanswered = (error: unknown): boolean => error instanceof Error && UNANSWERED.has(error.message);

/** Corked connections (their sockets) → what runs at the end of the turn, before the uncork. */
const corked = new WeakMap<object, Array<() => void>>();

/**
 * Holds a standalone connection's writes until the end of the event-loop turn, so the commands
 * of one turn (a burst of joins, publishes, count changes) leave in one `writev` instead of one
 * syscall each. On a cluster the commands go to several connections that ioredis opens and
 * replaces itself; they are written as issued.
 */
export function coalesceWrites(client: RedisClient): void {
  if (client instanceof Cluster) return;
  // `stream` is unset until the first connect, and replaced on each reconnect.
  const stream = client.stream as Writable | undefined;
  if (!stream || corked.has(stream)) return;
  const atEnd: Array<() => void> = [];
  corked.set(stream, atEnd);
  stream.cork();
  setImmediate(() => {
    // A hook may issue commands: they join this write (the socket is still corked).
    for (const hook of atEnd) hook();
    corked.delete(stream);
    stream.uncork();
  });
}

/**
 * Runs `hook` at the end of this event-loop turn, just before the standalone connection's
 * coalesced writes leave, so the commands it issues go out in the same write as the turn's
 * others, without waiting a turn more. `hook` must not throw.
 */
export function atTurnEnd(client: Redis, hook: () => void): void {
  coalesceWrites(client);
  const stream = client.stream as Writable | undefined;
  const atEnd = stream && corked.get(stream);
  if (atEnd) atEnd.push(hook);
  else setImmediate(hook);
}

const commandErrorListeners = new WeakMap<RedisClient, Array<() => void>>();

/** Calls `listener` for every Redis call on `client` that failed (for metrics). */
export function onCommandError(client: RedisClient, listener: () => void): void {
  commandErrorListeners.set(client, [...(commandErrorListeners.get(client) ?? []), listener]);
}

function reportCommandError(client: RedisClient): void {
  for (const listener of commandErrorListeners.get(client) ?? []) listener();
}

/**
 * Runs `first`, then `second`, guarded, where `first` must be applied before `second` (an index
 * written before the data it indexes). On one server both go out now, in order on the one
 * connection: one round trip. On a cluster the two may live on different masters, so `second`
 * waits for `first`.
 */
export async function inOrder<T>(
  client: RedisClient,
  first: () => Promise<unknown>,
  second: () => Promise<T>,
): Promise<T> {
  if (client instanceof Cluster) {
    await guard(client, first);
    return guard(client, second);
  }
  const [, result] = await Promise.all([guard(client, first), guard(client, second)]);
  return result;
}

/** A Lua script run by EVALSHA, loaded with EVAL when the server does not know it yet. */
export class LuaScript {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(
    client: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await evalFlat(client, 'evalsha', this.sha, keys, args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return evalFlat(client, 'eval', this.source, keys, args);
    }
  }
}
