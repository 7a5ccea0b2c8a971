import type { RedisTarget } from '../../src/config/load';
import { createLogger } from '../../src/logger';
import { createRedisClients } from '../../src/redis/clients';
import type { RedisClients } from '../../src/redis/clients';
import { redisKeys } from '../../src/redis/keys';
import type { RedisKeys } from '../../src/redis/keys';
// The harness imports nothing of the product, so core's own tests can use it.
import { startRedis, startRedisCluster } from '@switchboard/harness';
import { unique } from './wait';

export const silentLogger = createLogger({ level: 'silent' });

/** One Redis backend for a suite: clients made through it are closed after the suite. */
export interface RedisBackend {
  readonly target: RedisTarget;
  /** Fresh connections (command + subscriber), ready for commands. */
  clients(): Promise<RedisClients>;
  /** Key names under a prefix no other suite or test uses. */
  freshKeys(): RedisKeys;
}

async function ready(clients: RedisClients): Promise<RedisClients> {
  await clients.up();
  return clients;
}

/**
 * Runs `body` once against a standalone redis-server and once against a 3-master Redis Cluster,
 * both spawned for this file on free ports.
 */
export function describeEachRedis(body: (backend: () => RedisBackend) => void): void {
  const kinds = [
    { kind: 'standalone', start: async () => startRedis() },
    { kind: 'cluster', start: async () => startRedisCluster() },
  ] as const;
  for (const { kind, start } of kinds) {
    describe(`redis ${kind}`, () => {
      let stop: () => Promise<void> = async () => undefined;
      let target: RedisTarget;
      const open: RedisClients[] = [];
      beforeAll(async () => {
        const server = await start();
        stop = server.stop;
        target =
          'url' in server
            ? { kind: 'standalone', url: server.url }
            : { kind: 'cluster', nodes: server.nodes };
      }, 30_000);
      afterAll(async () => {
        await Promise.all(open.map((c) => c.close()));
        await stop();
      });
      const backend: RedisBackend = {
        get target() {
          return target;
        },
        clients: async () => {
          const clients = createRedisClients(target, silentLogger);
          open.push(clients);
          return ready(clients);
        },
        freshKeys: () => redisKeys(unique('sbt')),
      };
      body(() => backend);
    });
  }
}
