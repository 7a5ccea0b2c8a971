import type { RedisClients } from '../src/redis/clients';
import { RedisMessageLog } from '../src/redis/message-log-redis';
import { describeMessageLogContract } from './contracts/message-log.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeMessageLogContract(
    'redis',
    async (capacity) => new RedisMessageLog(clients.command, backend().freshKeys(), capacity),
  );
});
