import type { RedisClients } from '../src/redis/clients';
import { RedisConnectionCounts } from '../src/counts/counts-redis';
import { describeCountsContract } from './contracts/counts.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeCountsContract(
    'redis',
    async () => new RedisConnectionCounts(clients.command, backend().freshKeys()),
  );
});
