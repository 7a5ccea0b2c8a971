import { RedisBroker } from '../src/broker/broker-redis';
import type { RedisClients } from '../src/redis/clients';
import { describeBrokerContract } from './contracts/broker.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  describeBrokerContract('redis', async (count) => {
    const keys = backend().freshKeys();
    const opened: RedisClients[] = [];
    const brokers: RedisBroker[] = [];
    const addBroker = async (): Promise<RedisBroker> => {
      const clients = await backend().clients();
      opened.push(clients);
      const broker = new RedisBroker(clients, keys);
      await broker.ready();
      brokers.push(broker);
      return broker;
    };
    for (let i = 0; i < count; i++) await addBroker();
    return {
      brokers: [...brokers],
      addBroker,
      // A bare subscription to the control channel: what a node that predates replies amounts to.
      addSilentReceiver: async () => {
        const clients = await backend().clients();
        opened.push(clients);
        const { subscriber } = clients;
        if (backend().target.kind === 'cluster') await subscriber.ssubscribe(keys.control());
        else await subscriber.subscribe(keys.control());
      },
      close: async () => {
        await Promise.all(brokers.map((b) => b.close()));
        await Promise.all(opened.map((c) => c.close()));
      },
    };
  });
});
