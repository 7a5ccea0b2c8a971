import { Redis } from 'ioredis';
import type { Config, RedisTarget } from '../config/load';
import { EngineUnavailableError } from '../errors';
import type { Engine } from '../engine';
import type { Logger } from '../logger';
import type { StreamPosition } from '../history/history';
import { RedisBroker } from '../broker/broker-redis';
import { createRedisClients, onCommandError } from './clients';
import { onHistoryTrimmed } from './history-scripts';
import { RedisConnectionCounts } from '../counts/counts-redis';
import { RedisHistory } from '../history/history-redis';
import { RedisKeyStore } from '../keys/key-store-redis';
import { redisKeys } from './keys';
import { RedisMessageLog } from '../logs/message-log-redis';
import { RedisNodeRegistry } from '../nodes/node-registry-redis';
import { RedisPresenceStore } from '../presence/presence-redis';
import { RedisWebhookQueue } from '../webhooks/webhooks-redis';
import { createRedisQuotas } from '../quotas/quotas-redis';

/** How long start-up waits for Redis before it carries on unavailable (and recovers later). */
const STARTUP_WAIT_MS = 5000;

/**
 * The Redis engine: every port over one command connection and one subscriber connection.
 * Availability follows the command connection's health (clients.ts): false from the moment it
 * drops (on a cluster: any master), true once it is usable again; listeners hear every change,
 * the log hears `Redis lost` / `Redis back` once each.
 */
export async function createRedisEngine(
  config: Config,
  logger: Logger,
): Promise<Engine & { broker: RedisBroker }> {
  if (!config.redis) throw new Error('createRedisEngine needs REDIS_URL or REDIS_CLUSTER_NODES');
  const log = logger.child({ component: 'redis' });
  if (config.redis.kind === 'sentinel') await checkSentinels(config.redis);
  const clients = createRedisClients(config.redis, logger);
  const keys = redisKeys(config.redisPrefix);
  const { command, health } = clients;
  const broker = new RedisBroker(clients, keys, config.nodeId);

  let available = health.isUp();
  // The first connection is not news; `Redis back` is logged only after a loss or a failed start.
  let starting = true;
  let closing = false;
  const listeners: Array<(available: boolean) => void> = [];
  const setAvailable = (next: boolean): void => {
    if (next === available || closing) return;
    available = next;
    if (!starting) {
      if (next) log.info('Redis back');
      else log.warn('Redis lost');
    }
    for (const listener of listeners) listener(next);
  };
  health.onChange(setAvailable);

  const started = await Promise.race([
    Promise.all([clients.up(), broker.ready()]).then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), STARTUP_WAIT_MS).unref()),
  ]);
  starting = false;
  if (!started) log.warn('Redis not reachable at start-up; serving unavailable until it is');

  const logs = new RedisMessageLog(command, keys, config.limits.logSize);
  return {
    kind: 'redis',
    broker,
    // On a cluster the log's key and the topic's are in different slots: no riding append.
    ...(clients.target.kind === 'cluster'
      ? {}
      : {
          // Passed on as it is: a stream publication always resolves with its position.
          publishLogged: (publication, retention, key, record) =>
            broker.publish(publication, retention, logs.ridingAppend(key, record)) as Promise<StreamPosition>,
        }),
    history: new RedisHistory(command, keys, config.history.ttlSeconds),
    presence: new RedisPresenceStore(command, keys),
    counts: new RedisConnectionCounts(command, keys),
    logs,
    keys: new RedisKeyStore(command, keys),
    nodes: new RedisNodeRegistry(command, keys),
    webhooks: new RedisWebhookQueue(command, keys, {
      maxEvents: config.webhooks.queueMaxEvents,
      maxBytes: config.webhooks.queueMaxBytes,
    }),
    quotas: createRedisQuotas(command, keys, (error) =>
      log.debug({ err: error }, 'quota check failed; admitted (fail open)'),
    ),
    isAvailable: () => available,
    onAvailability: (listener) => {
      listeners.push(listener);
    },
    onCommandError: (listener) => onCommandError(command, listener),
    onHistoryTrimmed: (listener) => onHistoryTrimmed(command, listener),
    close: async () => {
      closing = true;
      await broker.close();
      await clients.close();
    },
  };
}

/** How long start-up waits for each sentinel's answer. */
const SENTINEL_CHECK_MS = 3000;

/**
 * Start-up with Sentinel: unlike a Redis that is down for a while (served as unavailable until
 * it answers), a sentinel list none of which answers, or whose sentinels know no master of that
 * name, is a configuration mistake: start-up stops, naming it (`EngineUnavailableError` for no
 * answer; the CLI prints one line for either).
 */
async function checkSentinels(target: Extract<RedisTarget, { kind: 'sentinel' }>): Promise<void> {
  const ask = async ({ host, port }: { host: string; port: number }): Promise<unknown> => {
    const sentinel = new Redis({
      host,
      port,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: SENTINEL_CHECK_MS,
      commandTimeout: SENTINEL_CHECK_MS,
      ...(target.sentinelPassword === undefined ? {} : { password: target.sentinelPassword }),
      ...(target.tls ? { tls: {} } : {}),
    });
    sentinel.on('error', () => undefined);
    try {
      await sentinel.connect();
      return await sentinel.call('SENTINEL', 'get-master-addr-by-name', target.name);
    } finally {
      sentinel.disconnect();
    }
  };
  const answers = await Promise.allSettled(target.sentinels.map(ask));
  const answered = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
  if (answered.length === 0) throw new EngineUnavailableError(new Error('no sentinel answers'));
  if (answered.every((address) => address === null)) {
    throw new Error(
      `the sentinels at ${target.sentinels.map((n) => `${n.host}:${n.port}`).join(',')} know no master named "${target.name}": set REDIS_SENTINEL_NAME to the name in their configuration`,
    );
  }
}
