import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * A presence socket's first presence frame is its member list (docs/protocol.md, "Presence"),
 * although the socket is open, and in its channel, before its join is answered: two sockets
 * whose joins are answered one after the other (held in order by a paused Redis: `CLIENT PAUSE
 * WRITE`, which also holds scripts) must not see each other's `member_joined` before their own
 * list. Every event still arrives, after the list.
 */

let redis: RedisServer;
let admin: Redis;
let nodes: TestGateway[];
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `order-${randomBytes(4).toString('hex')}` };
  nodes = [await startGateway({ env }), await startGateway({ env })];
  key = await createTestKey(nodes[0]!.engine);
});

afterAll(async () => {
  await admin?.call('CLIENT', 'UNPAUSE').catch(() => undefined);
  for (const client of clients) client.close();
  for (const node of nodes ?? []) await node.close();
  admin?.disconnect();
  await redis?.stop();
});

const open = async (node: TestGateway, path: string, query: Record<string, string>): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};

const presenceEvents = (client: TestClient, prefix: string) =>
  client.received
    .map((f) => String(f.json?.['event'] ?? ''))
    .filter((event) => event.startsWith(`${prefix}member_`));

const joinedBy = (user: string) => (f: { json: Record<string, unknown> | undefined }) =>
  String(f.json?.['event']).endsWith('member_joined') &&
  JSON.stringify((f.json!['data'] as { member: unknown }).member).includes(`"${user}"`);

it.each([
  ['v3', 'system:', '/v3/order-v3'],
  ['v4', 'system::', '/v4/order-v4'],
] as const)('%s: sends the list before any other presence event', async (_, prefix, path) => {
  const query = { presence: '1' };
  // The channel is subscribed and the key cached on both nodes: the upgrades below never wait.
  for (const node of nodes) {
    const observer = await open(node, path, { ...query, user: `observer-${node.port}` });
    await observer.nextEvent(`${prefix}member_list`);
  }
  // Writes wait while paused (at most 1 s, well within the gateway's command timeout): both
  // joins issued during admission stay unanswered, in order.
  await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
  const first = await open(nodes[0]!, path, { ...query, user: 'first' });
  const second = await open(nodes[0]!, path, { ...query, user: 'second' });
  await admin.call('CLIENT', 'UNPAUSE');
  // The first's join is answered first: its member_joined reaches the second (local delivery)
  // while the second's own join is still unanswered.
  await second.nextEvent(`${prefix}member_list`);
  await first.next(joinedBy('second'));
  expect(presenceEvents(first, prefix)[0]).toBe(`${prefix}member_list`);
  expect(presenceEvents(second, prefix)[0]).toBe(`${prefix}member_list`);
  // Nothing was dropped on the way: the second also hears of the first.
  await second.next(joinedBy('first'));
});

it('an opted-in presence subscription also gets its list before any other presence event', async () => {
  const path = '/v3/order-recover';
  const query = { presence: '1', recover: '1' };
  for (const node of nodes) {
    const observer = await open(node, path, { ...query, user: `observer-${node.port}` });
    await observer.nextEvent('system:member_list');
  }
  // Its history read comes first, then its join: both sockets' reads are held (a script waits
  // like a write) and answered together, so the second is in the channel while the first's join
  // is answered.
  await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
  const first = await open(nodes[0]!, path, { ...query, user: 'first' });
  const second = await open(nodes[0]!, path, { ...query, user: 'second' });
  await admin.call('CLIENT', 'UNPAUSE');
  await second.next(joinedBy('second'));
  await first.next(joinedBy('second'));
  for (const client of [first, second]) {
    expect(client.received[0]?.json?.['event']).toBe('system::position');
    expect(presenceEvents(client, 'system:')[0]).toBe('system:member_list');
  }
  expect(second.received.some(joinedBy('first'))).toBe(true);
});
