import { Cluster } from 'ioredis';
import { RedisBroker } from '../src/redis/broker-redis';
import type { RedisClients } from '../src/redis/clients';
import { RedisHistory } from '../src/redis/history-redis';
import { describeHistoryContract } from './contracts/history.contract';
import type { HistoryEngine } from './contracts/history.contract';
import { describeEachRedis } from './support/redis-targets';
import { waitUntil } from './support/wait';
import { EngineUnavailableError } from '../src/errors';

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

describeEachRedis((backend) => {
  // On a standalone server the publish script is loaded once per connection and run by its SHA1:
  // a script cache flushed under a live connection must cost one failed publish (nobody received
  // it, no offset taken), never a publication out of its order or lost silently.
  it('publishes in order after the script cache was flushed under the connection', async () => {
    const clients = await backend().clients();
    const keys = backend().freshKeys();
    const broker = new RedisBroker(clients, keys);
    await broker.ready();
    const received: string[] = [];
    broker.setHandlers({ message: (p) => received.push(`${p.offset}:${p.body}`), control: () => undefined });
    const topic = { key: 'k', protocol: 'v3' as const, channel: 'flushed' };
    await broker.subscribe(topic);
    const retention = { size: 10, ttlSeconds: 60 };
    const publish = (body: string) => broker.publish({ topic, body, origin: 'n1' }, retention);
    expect(await publish('a')).toMatchObject({ offset: 1 });
    const { command } = clients;
    const servers = command instanceof Cluster ? command.nodes('master') : [command];
    await Promise.all(servers.map((server) => server.script('FLUSH')));
    const second = await publish('b').then(
      (position) => position,
      (error: unknown) => error,
    );
    if (second instanceof Error) expect(second).toBeInstanceOf(EngineUnavailableError);
    expect(await publish('c')).toMatchObject({ offset: second instanceof Error ? 2 : 3 });
    const expected = second instanceof Error ? ['1:a', '2:c'] : ['1:a', '2:b', '3:c'];
    await waitUntil('the publications', () => received.length >= expected.length);
    expect(received).toEqual(expected);
    await broker.close();
  });
});
