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

  it('reads a record stored before app ids, and one whose appId field is damaged, without an app id', async () => {
    const keys = backend().freshKeys();
    const store = new RedisKeyStore(clients.command, keys);
    const legacy = {
      secret: 'legacy-secret',
      domains: '["example.com"]',
      clientMessages: '1',
      forceAuth: '0',
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    await clients.command.hset(keys.apiKey('legacy'), legacy);
    await clients.command.hset(keys.apiKey('damaged'), { ...legacy, appId: 'a/b' });
    await clients.command.sadd(keys.apiKeyIndex(), 'legacy', 'damaged');
    const expected = {
      secret: 'legacy-secret',
      domains: ['example.com'],
      clientMessages: true,
      forceAuth: false,
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    expect(await store.list()).toEqual([
      { key: 'damaged', ...expected },
      { key: 'legacy', ...expected },
    ]);
  });
});
