import type { RedisClients } from '../src/redis/clients';
import { RedisNodeRegistry } from '../src/nodes/node-registry-redis';
import { describeNodeRegistryContract } from './contracts/node-registry.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeNodeRegistryContract(
    'redis',
    async () => new RedisNodeRegistry(clients.command, backend().freshKeys()),
  );
});
