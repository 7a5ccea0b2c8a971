import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { redisKeys } from '../../packages/core/src/redis/keys';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient } from '@switchboard/testing';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/**
 * Anything on the Redis channels can reach every gateway: a broken or hostile publisher, or a newer
 * node during a rolling upgrade whose command type older nodes do not know. Such a message is
 * dropped and counted; no gateway stops, and the next good message still works.
 */

const key = testKey();
const prefix = `bad-${randomBytes(4).toString('hex')}`;
const keys = redisKeys(prefix);
let redis: RedisServer;
let raw: Redis;
const nodes: Array<NodeProcess & { metricsPort: number }> = [];
const clients: TestClient[] = [];

/** Control messages no node may act on, each with the problem the log names. */
const BAD_CONTROL: Array<[string, string]> = [
  ['garbage{', 'not JSON'],
  ['', 'not JSON'],
  ['null', 'not a command'],
  ['42', 'not a command'],
  ['[]', 'not a command'],
  ['{}', 'not a command'],
  ['{"type":7}', 'not a command'],
  ['{"type":"reboot-the-cluster","nodeId":"x"}', 'unknown type'],
  ['{"type":"kick"}', 'invalid kick'],
  ['{"type":"kick","selector":null}', 'invalid kick'],
  ['{"type":"kick","selector":{"reason":"no key"}}', 'invalid kick'],
  ['{"type":"key-changed","key":5}', 'invalid key-changed'],
  ['{"type":"node-dead"}', 'invalid node-dead'],
];
/** Fan-out messages that are not a publication's wire form: empty, garbage, truncated. */
const BAD_PUBLICATIONS = ['', 'garbage', 'A|n'];

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url, { lazyConnect: true });
  await raw.connect();
  const env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: 'info',
    METRICS_PORT: '0',
    SWITCHBOARD_KEYS: JSON.stringify([{ key: key.key, secret: key.secret }]),
  };
  for (let i = 0; i < 2; i++) {
    const node = await startNodeProcess(env);
    const metrics = await node.proc.waitForLog({ msg: 'metrics ready' });
    nodes.push({ ...node, metricsPort: Number(metrics['port']) });
  }
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const node of nodes) node.proc.kill('SIGKILL');
  raw?.disconnect();
  await redis?.stop();
});

async function dropped(node: { metricsPort: number }, kind: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${node.metricsPort}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('switchboard_dropped_messages_total{') && l.includes(`kind="${kind}"`));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

it('drops and counts malformed control messages and publications; every node keeps serving', async () => {
  const [a, b] = nodes as [NodeProcess & { metricsPort: number }, NodeProcess & { metricsPort: number }];
  // A V3 subscriber on each node, so both listen to the topic's fan-out channel.
  for (const node of [a, b]) clients.push(await connectClient(node.wsUrl('/v3/room', { api_key: key.key })));
  const [onA, onB] = clients as [TestClient, TestClient];
  const fanout = keys.fanout({ key: key.key, protocol: 'v3', channel: 'room' });
  await waitFor(
    'condition',
    async () => (await raw.call('PUBSUB', 'NUMSUB', fanout))?.toString() === `${fanout},2`,
    10_000,
  );
  for (const node of [a, b]) {
    expect(await dropped(node, 'control')).toBe(0);
    expect(await dropped(node, 'publication')).toBe(0);
  }

  for (const [message] of BAD_CONTROL) expect(await raw.publish(keys.control(), message)).toBe(2);
  for (const message of BAD_PUBLICATIONS) expect(await raw.publish(fanout, message)).toBe(2);

  for (const node of [a, b]) {
    await waitFor(
      `node ${node.id} counted every dropped message`,
      async () =>
        (await dropped(node, 'control')) === BAD_CONTROL.length &&
        (await dropped(node, 'publication')) === BAD_PUBLICATIONS.length,
      10_000,
    );
  }

  // Still alive and serving: health, a publication across nodes, a kick over the control channel.
  for (const node of [a, b]) {
    const exited = await Promise.race([node.proc.exited, Promise.resolve('running')]);
    expect(exited).toBe('running');
    expect((await fetch(`${node.httpUrl}/api/health`)).status).toBe(200);
  }
  const published = await postJson(`${a.httpUrl}/api/publish`, {
    key: key.key,
    secret: key.secret,
    channel: 'room',
    message: 'still here',
  });
  expect(published.status).toBe(200);
  await onB.next((frame) => frame.text === 'still here');
  await onA.next((frame) => frame.text === 'still here');
  const kicked = await postJson(`${b.httpUrl}/api/kick`, { key: key.key, secret: key.secret });
  expect(kicked.status).toBe(200);
  expect((await onA.closed).code).toBe(4509);
  expect((await onB.closed).code).toBe(4509);

  // Each kind of problem is logged once per node, however often it recurs.
  const problems = new Set([...BAD_CONTROL.map(([, problem]) => problem)]);
  for (const node of [a, b]) {
    const logged = node.proc.lines
      .filter((line) => line.includes('dropped a message from the engine'))
      .map((line) => JSON.parse(line) as { kind: string; problem: string })
      .map(({ kind, problem }) => `${kind}: ${problem}`);
    expect(logged.sort()).toEqual(
      [...[...problems].map((problem) => `control: ${problem}`), 'publication: undecodable'].sort(),
    );
  }
});
