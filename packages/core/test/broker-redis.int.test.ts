import { RedisBroker } from '../src/broker/broker-redis';
import type { RedisClients } from '../src/redis/clients';
import { describeBrokerContract } from './contracts/broker.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  describeBrokerContract('redis', async (count) => {
    const keys = backend().freshKeys();
    const opened: RedisClients[] = [];
    const brokers: RedisBroker[] = [];
    for (let i = 0; i < count; i++) {
      const clients = await backend().clients();
      opened.push(clients);
      const broker = new RedisBroker(clients, keys);
      await broker.ready();
      brokers.push(broker);
    }
    return {
      brokers,
      close: async () => {
        await Promise.all(brokers.map((b) => b.close()));
        await Promise.all(opened.map((c) => c.close()));
      },
    };
  });
});
