import type { RedisClients } from '../src/redis/clients';
import { RedisKeyStore } from '../src/keys/key-store-redis';
import { describeKeyStoreContract } from './contracts/key-store.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeKeyStoreContract('redis', async () => new RedisKeyStore(clients.command, backend().freshKeys()));
});
