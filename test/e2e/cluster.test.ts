import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/** Three gateway nodes on one Redis behave as one service (docs/scaling.md). */
let redis: RedisServer;
let nodes: TestGateway[];
let key: ApiKeyRecord;
const clients: TestClient[] = [];

const at = async (
  node: TestGateway,
  path: string,
  query: Record<string, string> = {},
): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};
const api = (node: TestGateway, path: string, body: Record<string, unknown>) =>
  postJson(`${node.httpUrl}${path}`, { key: key.key, secret: key.secret, ...body });
const node = (i: number): TestGateway => nodes[i]!;

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `t${randomBytes(4).toString('hex')}` };
  nodes = await Promise.all([0, 1, 2].map(() => startGateway({ env })));
  key = await createTestKey(node(0).engine);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  await redis.stop();
});

describe('cross-node fan-out', () => {
  it('delivers a publish made on any node to subscribers on every node, V3 and V4 apart', async () => {
    const v3 = await Promise.all(nodes.map((n) => at(n, '/v3/news')));
    const v4 = await Promise.all(nodes.map((n) => at(n, '/v4/news')));
    expect((await api(node(1), '/api/publish', { channel: 'news', message: 'three' })).body).toEqual({
      success: true,
      offset: 1,
      epoch: expect.any(String),
    });
    expect((await api(node(2), '/api/v4/publish', { channel: 'news', message: 'four' })).body).toEqual({
      success: true,
      offset: 1,
      epoch: expect.any(String),
    });
    for (const client of v3) expect((await client.next()).text).toBe('three');
    for (const client of v4) expect((await client.next()).text).toBe('four');
    for (const client of [...v3, ...v4]) await client.expectSilence(() => true, 100);
  });

  it('relays client frames across nodes, honouring notify_self for the sender only', async () => {
    const sender = await at(node(0), '/v4/room', { notify_self: '1' });
    const quiet = await at(node(1), '/v4/room');
    const far = await at(node(2), '/v4/home');
    far.send({ event: 'system::subscribe', data: { channel: 'room' } });
    await far.nextEvent('system::subscribe_success');
    sender.send('{"event":"m","data":1}');
    expect((await sender.next()).text).toBe('{"event":"m","data":1}');
    expect((await quiet.next()).text).toBe('{"event":"m","data":1}');
    expect((await far.next()).text).toBe('{"event":"m","data":1,"system::channel":"room"}');
    quiet.send('{"event":"back"}');
    await sender.next((f) => f.text === '{"event":"back"}');
    await quiet.expectSilence();
    await sender.expectSilence((f) => f.text === '{"event":"m","data":1}');
  });

  it('delivers direct messages to the target user on another node only', async () => {
    const alice = await at(node(0), '/v4/dm', { user: 'alice' });
    const bob = await at(node(2), '/v4/dm', { user: 'bob' });
    const carol = await at(node(1), '/v4/dm', { user: 'carol' });
    alice.send('{"event":"psst","system::to":"bob"}');
    expect((await bob.next()).text).toBe('{"event":"psst","system::to":"bob"}');
    await carol.expectSilence();
  });

  it('subscribes a node to a channel only while it has local subscribers', async () => {
    const subscriptions = node(2).gateway.context.subscriptions;
    const topic = { key: key.key, protocol: 'v3' as const, channel: 'transient' };
    expect(subscriptions.has(topic)).toBe(false);
    const client = await at(node(2), '/v3/transient');
    const other = await at(node(2), '/v3/transient');
    expect(subscriptions.has(topic)).toBe(true);
    client.close();
    await client.closed;
    other.send('still subscribed');
    expect(subscriptions.has(topic)).toBe(true);
    other.close();
    await waitFor(() => !subscriptions.has(topic));
  });
});

describe('presence across nodes', () => {
  it('deduplicates V4 identities across nodes and paginates them', async () => {
    const joins = [
      [0, 'ann', 'a1'],
      [1, 'ann', 'a2'],
      [2, 'bob', 'b1'],
      [1, 'cat', 'c1'],
    ] as const;
    for (const [i, user, uuid] of joins) {
      const client = await at(node(i), '/v4/lobby', { presence: '1', user, uuid });
      await client.nextEvent('system::member_list');
    }
    expect((await api(node(0), '/api/v4/members', { channel: 'lobby' })).body).toEqual({
      success: true,
      members: ['cat', 'bob', 'ann'],
      count: 3,
    });
    expect(
      (await api(node(2), '/api/v4/members', { channel: 'lobby', paginate: 1, limit: 2, page: 2 })).body,
    ).toEqual({
      success: true,
      members: ['ann'],
      count: 3,
      page: 2,
      limit: 2,
      totalPages: 2,
    });
  });

  it('sends one member_joined and one member_left per identity, on every node', async () => {
    const watcher = await at(node(0), '/v4/party', { presence: '1', user: 'watcher' });
    await watcher.nextEvent('system::member_list');
    const first = await at(node(1), '/v4/party', { presence: '1', user: 'dan' });
    const joined = await watcher.next(
      (f) => f.json?.['event'] === 'system::member_joined' && f.text.includes('"dan"'),
    );
    expect(joined.json?.['data']).toMatchObject({ member: { user: 'dan' }, count: 2 });
    const second = await at(node(2), '/v4/party', { presence: '1', user: 'dan' });
    await second.nextEvent('system::member_list');
    first.close();
    await first.closed;
    await watcher.expectSilence((f) => /member_(joined|left)/.test(String(f.json?.['event'])), 300);
    second.close();
    expect((await watcher.nextEvent('system::member_left')).json?.['data']).toMatchObject({
      member: { user: 'dan' },
      count: 1,
    });
  });

  it('sends V3 roster events to connections on other nodes', async () => {
    const a = await at(node(0), '/v3/presence-v3', { user: 'a', uuid: 'ua' });
    await a.nextEvent('system:member_list');
    await at(node(1), '/v3/presence-v3', { user: 'b', uuid: 'ub' });
    const joined = (
      await a.next((f) => f.json?.['event'] === 'system:member_joined' && f.text.includes('"ub"'))
    ).json?.['data'] as Record<string, unknown>;
    expect(joined['member']).toEqual({ uuid: 'ub', user: 'b' });
    expect(joined['members']).toEqual(
      expect.arrayContaining([
        { uuid: 'ua', user: 'a' },
        { uuid: 'ub', user: 'b' },
      ]),
    );
  });
});

describe('kicks across nodes', () => {
  const kicked = async (client: TestClient): Promise<void> => {
    expect((await client.closed).code).toBe(4509);
  };

  it('kicks by uuid, by user, by pair and by channel wherever the connections are', async () => {
    const byUuid = await at(node(1), '/v4/k', { uuid: 'x1', user: 'u1' });
    const byUser = [
      await at(node(0), '/v4/k', { uuid: 'y1', user: 'u2' }),
      await at(node(2), '/v4/k', { uuid: 'y2', user: 'u2' }),
    ];
    const byPair = await at(node(2), '/v4/k', { uuid: 'z1', user: 'u3' });
    const survivor = await at(node(1), '/v4/k', { uuid: 'z2', user: 'u3' });
    const v3 = await at(node(2), '/v3/k');
    await api(node(0), '/api/v4/kick', { uuid: 'x1' });
    await kicked(byUuid);
    await api(node(1), '/api/v4/kick', { user: 'u2' });
    for (const client of byUser) await kicked(client);
    await api(node(2), '/api/v4/kick', { uuid: 'z1', user: 'u3' });
    await kicked(byPair);
    await survivor.expectSilence();
    await api(node(0), '/api/v4/kick', { channel: 'k' });
    await kicked(survivor);
    await kicked(v3);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
