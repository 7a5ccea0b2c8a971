import { randomBytes } from 'node:crypto';
import { createMetrics } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';

/** The Redis series move with a Redis outage: connected 1 → 0 → 1, errors counted, one reconnect. */
it('records Redis availability, command errors and reconnects', async () => {
  const redis = await startRedis();
  const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
  const node = await startGateway({
    env: { REDIS_URL: redis.url, REDIS_PREFIX: `m${randomBytes(4).toString('hex')}` },
    metrics,
  });
  const value = async (name: string): Promise<number> =>
    (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name)?.values[0]?.value ?? NaN;
  const waitFor = async (condition: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error('condition not met in time');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  try {
    const key = await createTestKey(node.engine);
    expect(await value('switchboard_redis_connected')).toBe(1);
    await redis.kill();
    await waitFor(async () => (await value('switchboard_redis_connected')) === 0);
    const publish = await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'c',
      message: 'm',
    });
    expect(publish.status).toBe(503);
    expect(await value('switchboard_redis_command_errors_total')).toBeGreaterThanOrEqual(1);
    await redis.restart();
    await waitFor(async () => (await value('switchboard_redis_connected')) === 1);
    expect(await value('switchboard_redis_reconnects_total')).toBe(1);
  } finally {
    await node.close();
    await redis.stop();
  }
});
