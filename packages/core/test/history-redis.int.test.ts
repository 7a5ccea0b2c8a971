import { Cluster } from 'ioredis';
import { RedisBroker } from '../src/redis/broker-redis';
import type { RedisClients } from '../src/redis/clients';
import { RedisHistory } from '../src/redis/history-redis';
import { describeHistoryContract } from './contracts/history.contract';
import type { HistoryEngine } from './contracts/history.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  describeHistoryContract('redis', async () => {
    const keys = backend().freshKeys();
    const opened: RedisClients[] = [];
    const brokers: RedisBroker[] = [];
    return {
      start: async (count): Promise<HistoryEngine> => {
        for (let i = 0; i < count; i++) {
          const clients = await backend().clients();
          opened.push(clients);
          const broker = new RedisBroker(clients, keys);
          await broker.ready();
          brokers.push(broker);
        }
        const first = opened[0] as RedisClients;
        return { brokers: [...brokers], history: new RedisHistory(first.command, keys) };
      },
      advance: () => undefined,
      loseHistory: async (engine) => {
        const { command } = opened[0] as RedisClients;
        const servers = command instanceof Cluster ? command.nodes('master') : [command];
        await Promise.all(servers.map((server) => server.flushall()));
        return engine;
      },
      close: async () => {
        await Promise.all(brokers.map((b) => b.close()));
        await Promise.all(opened.map((c) => c.close()));
      },
    };
  });
});
