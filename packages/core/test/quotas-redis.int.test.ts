import type { RedisClients } from '../src/redis/clients';
import { createRedisQuotas } from '../src/quotas/quotas-redis';
import { describeQuotasContract } from './contracts/quotas.contract';
import { describeEachRedis } from './support/redis-targets';

describeEachRedis((backend) => {
  let nodeA: RedisClients;
  let nodeB: RedisClients;
  beforeAll(async () => {
    [nodeA, nodeB] = await Promise.all([backend().clients(), backend().clients()]);
  });
  const fail = (error: unknown): never => {
    throw error;
  };
  describeQuotasContract('redis', async (now) => {
    const keys = backend().freshKeys();
    return [
      createRedisQuotas(nodeA.command, keys, fail, now),
      createRedisQuotas(nodeB.command, keys, fail, now),
    ];
  });

  it('touches no Redis key for unlimited quotas, and names the counters through keys.ts', async () => {
    const keys = backend().freshKeys();
    const quotas = createRedisQuotas(nodeA.command, keys, fail, () => Date.UTC(2026, 0, 2, 3));
    await quotas.takeApiRequest('free', 0);
    await quotas.takePublish('free', 0, 0);
    await quotas.takeApiRequest('paid', 5);
    await quotas.takePublish('paid', 5, 100);
    const exists = (name: string) => nodeA.command.exists(name);
    expect(await exists(keys.quotaApiRequests('free'))).toBe(0);
    expect(await exists(keys.quotaPublishes('free'))).toBe(0);
    expect(await exists(keys.quotaMessagesDay('free', '2026-01-02'))).toBe(0);
    expect(await exists(keys.quotaApiRequests('paid'))).toBe(1);
    expect(await exists(keys.quotaPublishes('paid'))).toBe(1);
    expect(await exists(keys.quotaMessagesDay('paid', '2026-01-02'))).toBe(1);
  });
});
