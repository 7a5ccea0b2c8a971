/**
 * Offsets and recovery across gateways on a real Redis: one order for every node, the sender
 * left out of its own stream publication on every node, and a node whose pub/sub connection
 * dropped catches up from history instead of losing publications silently.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

let redis: RedisServer;
let a: TestGateway;
let b: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

const at = async (node: TestGateway, path: string, query: Record<string, string> = {}) => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};
const publish = async (node: TestGateway, channel: string, message: unknown, version = 'v3') => {
  const path = version === 'v3' ? '/api/publish' : '/api/v4/publish';
  const reply = await postJson(`${node.httpUrl}${path}`, {
    key: key.key,
    secret: key.secret,
    channel,
    message,
  });
  expect(reply.status).toBe(200);
  return reply.body as { offset: number; epoch: string };
};
const offsetsOf = (client: TestClient) =>
  client.received.map((f) => f.json?.['system::offset']).filter((o): o is number => typeof o === 'number');

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `h${randomBytes(4).toString('hex')}` };
  [a, b] = await Promise.all([startGateway({ env }), startGateway({ env })]);
  key = await createTestKey(a!.engine);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  await redis.stop();
});

describe('streams on Redis', () => {
  it('gives every node one order of offsets; plain sockets keep their frames', async () => {
    const onA = await at(a, '/v3/one-order', { recover: '1' });
    const onB = await at(b, '/v3/one-order', { recover: '1' });
    const plain = await at(b, '/v3/one-order');
    await onA.nextEvent('system::position');
    await onB.nextEvent('system::position');
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => publish(i % 2 ? a : b, 'one-order', { event: 'n', data: i })),
    );
    for (const client of [onA, onB]) {
      await client.next((f) => f.json?.['system::offset'] === 20);
      expect(offsetsOf(client)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    }
    await plain.next(() => plain.received.length >= 20);
    expect(plain.received.every((f) => f.json?.['system::offset'] === undefined)).toBe(true);
  });

  it('leaves a sender without notify_self out of its own message on every node, and relays it to others with its offset', async () => {
    const sender = await at(a, '/v4/relay-r', { recover: '1' });
    const local = await at(a, '/v4/relay-r', { recover: '1' });
    const remote = await at(b, '/v4/relay-r', { recover: '1' });
    for (const c of [sender, local, remote]) await c.nextEvent('system::position');
    sender.send('{"event":"said","data":1}');
    expect((await local.nextEvent('said')).text).toBe('{"event":"said","data":1,"system::offset":1}');
    expect((await remote.nextEvent('said')).text).toBe('{"event":"said","data":1,"system::offset":1}');
    await publish(b, 'relay-r', 'after', 'v4');
    await sender.next((f) => f.json?.['system::offset'] === 2);
    expect(offsetsOf(sender)).toEqual([2]);
  });

  it('catches up from history after its pub/sub connection dropped, in order, with no duplicate', async () => {
    const client = await at(b, '/v3/dropped', { recover: '1' });
    await client.nextEvent('system::position');
    await publish(a, 'dropped', 'before');
    await client.next((f) => f.json?.['system::offset'] === 1);
    const admin = new Redis(redis.url);
    try {
      // Both nodes' subscriber connections are gone until they reconnect; what the next lines
      // publish (in this same turn, before any reconnect can run) reaches no node.
      await admin.client('KILL', 'TYPE', 'pubsub');
      const lost = [1, 2, 3].map((i) =>
        a.engine.broker.publish(
          {
            topic: { key: key.key, protocol: 'v3', channel: 'dropped' },
            body: `lost ${i}`,
            origin: 'elsewhere',
            source: 'api',
            acceptedAt: Date.now(),
          },
          { size: 100, ttlSeconds: 120 },
        ),
      );
      expect((await Promise.all(lost)).map((p) => p?.offset)).toEqual([2, 3, 4]);
    } finally {
      admin.disconnect();
    }
    await client.next((f) => f.json?.['system::offset'] === 4);
    await publish(a, 'dropped', 'after');
    await client.next((f) => f.json?.['system::offset'] === 5);
    expect(offsetsOf(client)).toEqual([1, 2, 3, 4, 5]);
    // Its first position (the channel had no history: an empty epoch), then the channel's first
    // epoch at offset 0, nothing lost; no other position.
    const positions = client.received
      .filter((f) => f.json?.['event'] === 'system::position')
      .map((f) => f.json!['data'] as Record<string, unknown>);
    expect(positions).toEqual([
      { channel: 'dropped', epoch: expect.stringMatching(/^_e/), offset: 0, missed: 0 },
      { channel: 'dropped', epoch: expect.not.stringMatching(/^_e/), offset: 0, recovered: true, missed: 0 },
    ]);
  });

  it('resumes on another node with what it missed', async () => {
    const first = await at(a, '/v4/moving', { recover: '1' });
    await first.nextEvent('system::position');
    await publish(b, 'moving', 'one', 'v4');
    // The channel's first publication comes after its epoch (the first position was an empty one).
    const position = (await first.nextEvent('system::position')).json!['data'] as { epoch: string };
    await first.next((f) => f.json?.['system::offset'] === 1);
    first.close();
    await first.closed;
    await publish(b, 'moving', 'two', 'v4');
    await publish(a, 'moving', { event: 'three' }, 'v4');
    const again = await at(b, '/v4/moving', { since: '1', epoch: position.epoch });
    expect((await again.nextEvent('system::position')).json!['data']).toEqual({
      channel: 'moving',
      epoch: position.epoch,
      offset: 3,
      recovered: true,
      missed: 2,
    });
    expect((await again.next()).text).toBe('{"event":"system::message","data":"two","system::offset":2}');
    expect((await again.next()).text).toBe('{"event":"three","system::offset":3}');
  });
});
