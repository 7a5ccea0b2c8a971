import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { generateKeyRecord, seedKeys } from '@switchboard/core';
import { startRedisCluster, waitFor } from '@switchboard/harness';
import type { RedisClusterHandle } from '@switchboard/harness';
import { postJson, startGateway, TestClient } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';

/**
 * Live delivery on a gateway that runs through a restart of every master of a Redis Cluster
 * (empty, as the chaos run's Redis restart does): after it, every publication made through
 * another gateway reaches every opted-in subscriber of this one, in order, or the subscriber is
 * told `recovered: false`. The topics are spread over the three masters; some are held by the
 * same sockets all along, some lose their last local subscriber during the outage and get a new
 * one after it, some get their first subscriber only once the cluster is back (the clients of the
 * gateways stopped during the outage, resuming on the one that stayed up).
 *
 * Before the restart, one topic's slot moves to another master and the gateway rewrites its
 * state at once (as after a restart where a master came back late and its replica had taken its
 * slots): the SSUBSCRIBE of that rewrite reaches the old master, which answers MOVED. ioredis
 * never settled such a call, so the rewrite never ended, and every later one waited for it: the
 * topic streams, held at the next Redis loss until a rewrite is done, stayed held for good, and
 * nothing was delivered on any topic (docs/reliability.md, the Redis Cluster restart note).
 *
 * `TEST_LOG_LEVEL=info` prints the gateways' logs (silent otherwise).
 */

jest.setTimeout(180_000);

const seed = generateKeyRecord();
const logLevel = process.env['TEST_LOG_LEVEL'] ?? 'silent';
let cluster: RedisClusterHandle;
let env: Record<string, string>;
let a: TestGateway;
let b: TestGateway | undefined;
const sockets: TestClient[] = [];

/** Topics per group: enough that each master serves several. */
const PER_GROUP = 6;
const held = Array.from({ length: PER_GROUP }, (_, i) => `held-${i}`);
const churned = Array.from({ length: PER_GROUP }, (_, i) => `churned-${i}`);
const fresh = Array.from({ length: PER_GROUP }, (_, i) => `fresh-${i}`);
/** Publications per topic after the restart. */
const AFTER = 15;

interface Frame {
  event?: string;
  data?: unknown;
  'system::offset'?: number;
}

/** An opted-in V4 subscriber of `channel` on `node` (`recover=1`), once admitted (its position came). */
async function subscriber(node: TestGateway, channel: string): Promise<TestClient> {
  const client = new TestClient(node.wsUrl(`/v4/${channel}`, { api_key: seed.key, recover: '1' }));
  sockets.push(client);
  await client.nextEvent('system::position', 10_000);
  return client;
}

/**
 * Connects until a subscriber is admitted: while the engine is away the gateway closes a
 * `recover` socket (history unavailable), and a client connects again, as the chaos clients do.
 */
async function subscriberEventually(node: TestGateway, channel: string): Promise<TestClient> {
  for (;;) {
    const client = new TestClient(node.wsUrl(`/v4/${channel}`, { api_key: seed.key, recover: '1' }));
    const admitted = await Promise.race([
      client.nextEvent('system::position', 10_000).then(
        () => true,
        () => false,
      ),
      client.closed.then(() => false),
    ]);
    if (admitted) {
      sockets.push(client);
      return client;
    }
    client.close();
    await client.closed;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Publishes through `node` until acknowledged (a 503 while the cluster forms is tried again). */
async function publish(node: TestGateway, channel: string, data: string): Promise<void> {
  const body = { key: seed.key, secret: seed.secret, channel, message: { event: 'n', data } };
  let last = '';
  await waitFor(
    `the publish of ${data} acknowledged`,
    async () => {
      const reply = await postJson(`${node.httpUrl}/api/v4/publish`, body).catch((error: Error) => error);
      last = reply instanceof Error ? reply.message : `${reply.status} ${JSON.stringify(reply.body)}`;
      return !(reply instanceof Error) && reply.status === 200;
    },
    30_000,
    50,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; last answer: ${last}`);
  });
}

/** The `data` of every publication `client` received after its latest `recovered: false` position. */
function receivedSinceLoss(client: TestClient): { data: string[]; lost: boolean } {
  let data: string[] = [];
  let lost = false;
  for (const { json } of client.received) {
    const frame = json as Frame | undefined;
    if (frame?.event === 'system::position' && (frame.data as { recovered?: boolean }).recovered === false) {
      data = [];
      lost = true;
    } else if (frame?.event === 'n') data.push(frame.data as string);
  }
  return { data, lost };
}

/**
 * Gives the slot of `channel`'s topic to another master, and has the gateway
 * rewrite its state to the engine right away (a `node-dead` command naming it, as a survivor
 * sends about a node it took for dead), before its sharded subscriber reads the new slot table.
 */
async function moveSlotAndRewrite(channel: string): Promise<void> {
  const slot = await cluster.keySlot(`{${seed.key}|v4|${channel}}`);
  const rows = await cluster.topology();
  const owner = rows.find((row) => row.slots.some(([from, to]) => slot >= from && slot <= to))!;
  // Masters that serve slots (a node that just became a replica may still be listed as a master).
  const masters = rows.filter((row) => row.role === 'master' && row.slots.length > 0);
  const target = masters.find((row) => row.id !== owner.id)!;
  // Masters only (replicas refuse SETSLOT; they learn it from them). The slot's keys (the
  // topic's history) are dropped first, as a lost master's are: a master keeps a slot it holds keys of.
  for (const row of [owner, ...masters.filter(({ id }) => id !== owner.id)]) {
    const admin = new Redis(row.port, '127.0.0.1');
    try {
      const held = (await admin.cluster('GETKEYSINSLOT', slot, 100)) as string[];
      if (held.length > 0) await admin.del(...held);
      await admin.cluster('SETSLOT', slot, 'NODE', target.id);
    } finally {
      admin.disconnect();
    }
  }
  await a.engine.broker.publishControl({ type: 'node-dead', nodeId: a.config.nodeId });
  // Publications on the moved topic reach its subscriber again (ioredis follows the slot).
  let n = 0;
  const client = sockets.find((socket) => socket.socket.url.includes(`/v4/${channel}?`))!;
  await waitFor(
    'a publication on the moved topic delivered',
    async () => {
      await publish(a, channel, `${channel}:moved-${n++}`);
      return client.received.some((frame) =>
        String((frame.json as Frame | undefined)?.data).includes(':moved-'),
      );
    },
    20_000,
    200,
  );
}

beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 1 });
  env = {
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    REDIS_PREFIX: `cdeliv-${randomBytes(4).toString('hex')}`,
    SWITCHBOARD_KEYS: JSON.stringify([{ key: seed.key, secret: seed.secret }]),
    KEY_CACHE_MS: '0',
    LOG_LEVEL: logLevel,
  };
  a = await startGateway({ env });
  await seedKeys(a.engine.keys, a.config.seedKeys);
});

afterAll(async () => {
  for (const socket of sockets) socket.close();
  await b?.close();
  await a?.close();
  await cluster?.stop();
});

it('delivers every publication to every subscriber after every master restarted empty', async () => {
  const holders = new Map<string, TestClient>();
  for (const channel of [...held, ...churned]) holders.set(channel, await subscriber(a, channel));
  for (const channel of [...held, ...churned]) await publish(a, channel, `${channel}:before`);
  for (const [channel, client] of holders)
    await client.next((frame) => (frame.json as Frame | undefined)?.data === `${channel}:before`, 10_000);

  await moveSlotAndRewrite(held[0]!);
  await cluster.kill();
  await waitFor('the gateway to lose the cluster', () => !a.engine.isAvailable(), 20_000, 20);
  // The last local subscriber of each churned topic leaves while the cluster is down; new ones
  // (and the first ones of the fresh topics) try to come in all along.
  for (const channel of churned) holders.get(channel)!.close();
  const arriving = [...churned, ...fresh].map((channel) =>
    subscriberEventually(a, channel).then((client) => holders.set(channel, client)),
  );
  await cluster.restart();
  await waitFor('the gateway to have the cluster back', () => a.engine.isAvailable(), 30_000, 20);
  await Promise.all(arriving);
  b = await startGateway({ env });
  await seedKeys(b.engine.keys, b.config.seedKeys);

  const topics = [...held, ...churned, ...fresh];
  await Promise.all(
    topics.map(async (channel) => {
      for (let n = 1; n <= AFTER; n++) await publish(b!, channel, `${channel}:${n}`);
    }),
  );
  const last = (channel: string): string => `${channel}:${AFTER}`;
  const missing = (): string[] =>
    topics.filter((channel) => !receivedSinceLoss(holders.get(channel)!).data.includes(last(channel)));
  await waitFor('the last publication on every subscriber', () => missing().length === 0, 20_000, 50).catch(
    () => {
      throw new Error(`no last publication on: ${missing().join(', ')}`);
    },
  );
  for (const channel of topics) {
    const { data, lost } = receivedSinceLoss(holders.get(channel)!);
    const after = data.filter((item) => item !== `${channel}:before` && !item.includes(':moved-'));
    const expected = Array.from({ length: AFTER }, (_, i) => `${channel}:${i + 1}`);
    // After a `recovered: false`, the publications from some point on, in order; else all of them.
    expect({ channel, after }).toEqual({ channel, after: lost ? expected.slice(-after.length) : expected });
  }
});
