import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { TestClient, connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestGateway } from '@switchboard/testing';

const LIMIT = 5;
let redis: RedisServer;
let gateways: TestGateway[] = [];
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, MAX_CONNECTIONS_PER_KEY: String(LIMIT) };
  gateways = await Promise.all([startGateway({ env }), startGateway({ env })]);
}, 30_000);
beforeEach(async () => {
  key = await createTestKey(gateways[0]!.engine);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await redis.stop();
});

const url = (node: number, path: string): string => gateways[node]!.wsUrl(path, { api_key: key.key });
const sockets = (): Promise<number> => gateways[0]!.engine.counts.sockets(key.key);
const refusal = { error: `Connection limit reached for this API key (limit ${LIMIT})` };

describe('MAX_CONNECTIONS_PER_KEY: sockets, reserved atomically across gateways', () => {
  it('admits exactly the limit from a simultaneous burst on two gateways', async () => {
    const burst = Array.from({ length: 24 }, (_, i) => new TestClient(url(i % 2, `/v3/burst-${i % 4}`)));
    clients.push(...burst);
    await Promise.all(burst.map((client) => client.opened));
    const refused = burst.map(async (client) => {
      const frame = await client.next(() => true, 10_000).catch(() => undefined);
      return frame?.json?.['error'] === refusal.error && (await client.closed).code === 4529;
    });
    // Each socket gets exactly one frame: its refusal, or the publication of its channel below.
    for (let channel = 0; channel < 4; channel++) {
      const response = await postJson(`${gateways[channel % 2]!.httpUrl}/api/publish`, {
        key: key.key,
        secret: key.secret,
        channel: `burst-${channel}`,
        message: 'still here',
      });
      expect(response.status).toBe(200);
    }
    const outcomes = await Promise.all(refused);
    expect(outcomes.filter(Boolean)).toHaveLength(burst.length - LIMIT);
    const open = burst.filter((_, i) => !outcomes[i]);
    expect(open).toHaveLength(LIMIT);
    for (const client of open) expect(client.received.map((f) => f.text)).toEqual(['still here']);
    expect(await sockets()).toBe(LIMIT);
  });

  it('counts a V4 socket once whatever its channels, and frees its place when it closes', async () => {
    const many = await connectClient(url(0, '/v4/primary'));
    clients.push(many);
    for (let i = 0; i < 8; i++) {
      many.send({ event: 'system::subscribe', data: { channel: `extra-${i}` } });
      await many.nextEvent('system::subscribe_success');
    }
    for (let i = 1; i < LIMIT; i++) clients.push(await connectClient(url(i % 2, '/v4/other')));
    expect(await sockets()).toBe(LIMIT);
    await waitFor(
      'the subscriptions counted',
      async () => (await gateways[1]!.engine.counts.sum(key.key)) === 9 + LIMIT - 1,
    );

    const over = new TestClient(url(1, '/v4/over'));
    clients.push(over);
    expect((await over.next()).json).toEqual(refusal);
    expect((await over.closed).code).toBe(4529);

    many.close();
    await waitFor('the place freed', async () => (await sockets()) === LIMIT - 1);
    clients.push(await connectClient(url(1, '/v4/next')));
    expect(await sockets()).toBe(LIMIT);
  });

  it('reserves the open sockets again when Redis comes back empty', async () => {
    for (let i = 0; i < 3; i++) clients.push(await connectClient(url(i % 2, '/v4/kept')));
    expect(await sockets()).toBe(3);
    await redis.restart();
    // Each gateway rewrites its own share from its open sockets once it reconnects.
    await waitFor('the reservations rewritten', async () => (await sockets().catch(() => -1)) === 3, 15_000);
  }, 20_000);
});
