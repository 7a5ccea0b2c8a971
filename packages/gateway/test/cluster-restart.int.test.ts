import { randomBytes } from 'node:crypto';
import { generateKeyRecord, seedKeys } from '@switchboard/core';
import Redis from 'ioredis';
import { startRedisCluster, waitFor } from '@switchboard/harness';
import type { RedisClusterHandle } from '@switchboard/harness';
import { connectClient, postJson, startGateway, TestClient } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';

/**
 * A Redis Cluster without persistence restarted empty under a running gateway: the master of the
 * key store, then every master at once (the chaos run's Redis restart on a cluster). The gateway
 * writes its share back (docs/scaling.md, "Failure behaviour"): the key of `SWITCHBOARD_KEYS`,
 * its sockets' counts and presence, and publications reach them again. Clients connect all
 * along, as reconnecting clients do: none may be told 4501 `Invalid API key` (a client does not
 * reconnect after it), however the cluster's return and the node's rewrite fall. To hold open the time between the cluster
 * answering again and the key written back (on a cluster: masters still forming, a subscriber
 * connection not ready yet), the key store's master comes back refusing writes (maxmemory 1)
 * until it has refused the gateway's rewrite once.
 */

jest.setTimeout(120_000);

const seed = generateKeyRecord();
let cluster: RedisClusterHandle;
let node: TestGateway;
const sockets: TestClient[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  node = await startGateway({
    env: {
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      REDIS_PREFIX: `crestart-${randomBytes(4).toString('hex')}`,
      SWITCHBOARD_KEYS: JSON.stringify([{ key: seed.key, secret: seed.secret }]),
      KEY_CACHE_MS: '0',
    },
  });
  // What start-up does before the gateway listens (packages/cli/src/bootstrap.ts).
  await seedKeys(node.engine.keys, node.config.seedKeys);
  for (const uuid of ['p1', 'p2']) {
    sockets.push(await connectClient(node.wsUrl('/v3/room', { api_key: seed.key, presence: '1', uuid })));
  }
  sockets.push(await connectClient(node.wsUrl('/v3/room', { api_key: seed.key })));
});

afterAll(async () => {
  for (const socket of sockets) socket.close();
  await node?.close();
  await cluster?.stop();
});

/** One connection attempt with the seeded key: admitted (the boot frame came) or its close code. */
async function attempt(): Promise<'admitted' | number> {
  const client = new TestClient(node.wsUrl('/v3/probe', { api_key: seed.key, be: '1' }));
  const outcome = await Promise.race([
    // A refused socket gets an error frame before its close: only the greeting means admitted.
    client
      .next((frame) => frame.text === '{"event":"system:boot"}', 10_000)
      .then(
        () => 'admitted' as const,
        () => undefined,
      ),
    client.closed.then(({ code }) => code),
  ]);
  client.close();
  return outcome ?? (await client.closed).code;
}

/** Connects one client after another until `stop` is called; resolves with every outcome. */
function probe(): { stop: () => Promise<Array<'admitted' | number>> } {
  const outcomes: Array<'admitted' | number> = [];
  let running = true;
  const loop = (async () => {
    while (running) outcomes.push(await attempt());
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return outcomes;
    },
  };
}

/** Waits until the engine holds the key and the three sockets' counts and presence again. */
async function converged(): Promise<void> {
  await waitFor(
    'the seeded key, the counts and the presence written back',
    async () => {
      if (!node.engine.isAvailable()) return false;
      try {
        const record = await node.engine.keys.get(seed.key);
        const counts = await node.engine.counts.list(seed.key);
        const roster = await node.engine.presence.roster(
          { key: seed.key, protocol: 'v3', channel: 'room' },
          10,
        );
        return (
          record?.secret === seed.secret &&
          counts.items.find((item) => item.channel === 'room')?.count === 3 &&
          roster.members
            .map((member) => member.uuid)
            .sort()
            .join() === 'p1,p2'
        );
      } catch {
        return false;
      }
    },
    30_000,
    100,
  );
}

/**
 * Waits until publications reach the open sockets again (the broker's subscriptions restored):
 * each check publishes one more and looks for any of them on every socket.
 */
async function delivering(label: string): Promise<void> {
  let sent = 0;
  const mark = `${label}-`;
  await waitFor(
    'a publication after the restart on every open socket',
    async () => {
      const message = { key: seed.key, secret: seed.secret, channel: 'room', message: `${mark}${sent++}` };
      await postJson(`${node.httpUrl}/api/publish`, message).catch(() => undefined);
      return sockets.every((socket) => socket.received.some((frame) => frame.text.startsWith(mark)));
    },
    30_000,
    100,
  );
}

/** The master that serves the key store's slot (`{keystore}`), where the seeded key lives. */
async function keystoreMaster(): Promise<number> {
  const slot = await cluster.keySlot('{keystore}');
  const owner = (await cluster.topology()).find(
    (row) => row.role === 'master' && row.slots.some(([from, to]) => slot >= from && slot <= to),
  );
  if (!owner) throw new Error(`no master serves slot ${slot}`);
  return owner.port;
}

const REFUSING_WRITES = ['--maxmemory', '1', '--maxmemory-policy', 'noeviction'];

/** Waits until the node on `port` refused one of the gateway's writes (out of memory), then lets it accept them. */
async function refuseOnceThenAccept(port: number): Promise<void> {
  const admin = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    await waitFor(
      `the master on :${port} to refuse the gateway's rewrite`,
      async () => /errorstat_OOM:count=[1-9]/.test(await admin.info('errorstats')),
      30_000,
      50,
    );
    await admin.config('SET', 'maxmemory', '0');
  } finally {
    admin.disconnect();
  }
}

it('writes the seeded key, counts and presence back after the key store master restarted empty', async () => {
  const port = await keystoreMaster();
  const probing = probe();
  await cluster.killNode(port);
  await cluster.restartNode(port, REFUSING_WRITES);
  await refuseOnceThenAccept(port);
  await converged();
  await delivering('one-master');
  const outcomes = await probing.stop();
  expect(outcomes.filter((outcome) => outcome === 4501).length).toBe(0);
  expect(await attempt()).toBe('admitted');
});

it('writes them back after every master restarted empty at once', async () => {
  const port = await keystoreMaster();
  const probing = probe();
  await cluster.kill();
  await Promise.all(
    cluster.nodes.map((node) => cluster.restartNode(node.port, node.port === port ? REFUSING_WRITES : [])),
  );
  await refuseOnceThenAccept(port);
  await converged();
  await delivering('every-master');
  const outcomes = await probing.stop();
  expect(outcomes.filter((outcome) => outcome === 4501).length).toBe(0);
  expect(await attempt()).toBe('admitted');
});
