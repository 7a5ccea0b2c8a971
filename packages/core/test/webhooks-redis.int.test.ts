import type { RedisClients } from '../src/redis/clients';
import { RedisConnectionCounts } from '../src/redis/counts-redis';
import { RedisKeyStore } from '../src/redis/key-store-redis';
import { RedisPresenceStore } from '../src/redis/presence-redis';
import { RedisWebhookQueue } from '../src/redis/webhooks-redis';
import { describeWebhooksContract } from './contracts/webhooks.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeWebhooksContract('redis', async () => {
    const keys = backend().freshKeys();
    const client = clients.command;
    return {
      counts: new RedisConnectionCounts(client, keys),
      presence: new RedisPresenceStore(client, keys),
      webhooks: new RedisWebhookQueue(client, keys),
      keys: new RedisKeyStore(client, keys),
    };
  });
});
