import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * A count or presence write can fail while the connection to Redis stays up (an error reply, a
 * command timeout under load): no reconnect follows to rewrite the node's share, so the node
 * repairs it itself shortly after (docs/scaling.md, "Failure behaviour"). Here Redis refuses
 * writes (out of memory) while sockets open, then accepts them again.
 */

let redis: RedisServer;
let admin: Redis;
let node: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  node = await startGateway({
    env: { REDIS_URL: redis.url, REDIS_PREFIX: `repair-${randomBytes(4).toString('hex')}` },
  });
  key = await createTestKey(node.engine);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await node?.close();
  admin?.disconnect();
  await redis?.stop();
});

const oomReplies = async (): Promise<number> =>
  Number(/errorstat_OOM:count=(\d+)/.exec(await admin.info('errorstats'))?.[1] ?? 0);

it('rewrites the counts and presence that Redis refused once it accepts writes again', async () => {
  await admin.config('SET', 'maxmemory-policy', 'noeviction');
  await admin.config('SET', 'maxmemory', '1');
  const refusedBefore = await oomReplies();
  for (const query of [{}, { presence: '1', uuid: 'p1' }]) {
    const client = await connectClient(node.wsUrl('/v3/room', { api_key: key.key, ...query }));
    clients.push(client);
  }
  await waitFor('Redis to refuse the count writes', async () => (await oomReplies()) > refusedBefore);
  expect(node.engine.isAvailable()).toBe(true);
  await admin.config('SET', 'maxmemory', '0');

  const count = async (): Promise<number> =>
    (await node.engine.counts.list(key.key)).items.find((item) => item.channel === 'room')?.count ?? 0;
  await waitFor('the node to rewrite its count', async () => (await count()) === 2, 15_000, 100);
  const roster = await node.engine.presence.roster({ key: key.key, protocol: 'v3', channel: 'room' }, 10);
  expect(roster.members.map((m) => m.uuid)).toEqual(['p1']);
});

it('counts each socket once when sockets open and close while the node rewrites its share', async () => {
  // Each rewrite removes the node's share and counts its open connections again; a socket that
  // opens or closes meanwhile has its own count write queued behind the writes in flight, which
  // can land after the removal, on top of the rewrite's count of it. Rewrites are asked for (a
  // `node-dead` naming the node, as a survivor sends) while sockets keep opening and closing.
  const open = new Set<TestClient>();
  let churning = true;
  let round = 0;
  const churn = (async () => {
    while (churning) {
      round++;
      const client = await connectClient(node.wsUrl('/v3/churn', { api_key: key.key }));
      open.add(client);
      clients.push(client);
      if (round % 3 === 0) {
        const [oldest] = open;
        open.delete(oldest!);
        oldest!.close();
      }
    }
  })();
  for (let i = 0; i < 6; i++) {
    await node.engine.broker.publishControl({ type: 'node-dead', nodeId: node.config.nodeId });
    await waitFor('more sockets', () => round >= (i + 1) * 8, 10_000, 5);
  }
  churning = false;
  await churn;

  const count = async (): Promise<number> =>
    (await node.engine.counts.list(key.key)).items.find((item) => item.channel === 'churn')?.count ?? 0;
  // Settled: the count equals the sockets open (the closes reached the gateway, and a rewrite
  // that raced with them ran again).
  await waitFor(
    'the count to equal the sockets open',
    async () => (await count()) === open.size,
    15_000,
    100,
  );
  await new Promise((resolve) => setTimeout(resolve, 3000));
  expect(await count()).toBe(open.size);
});
