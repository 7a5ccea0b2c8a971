import Redis from 'ioredis';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import type { ChaosCluster } from '../src/cluster';
import { scanKeys } from '../src/keyscan';
import type { Truth } from '../src/state';

/** The key scan of the chaos run against a real Redis: documented keys pass, ghosts and strangers fail. */

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

it('explains every documented key of the live cluster and flags ghosts, dead nodes, missing TTLs and unknown keys', async () => {
  const p = 'cx';
  const k = 'key1';
  const cluster = {
    prefix: p,
    key: { key: k, secret: 's' },
    live: new Map([['gw1', {}]]),
  } as unknown as ChaosCluster;
  const truth: Truth = {
    counts: new Map([['presence-lobby', 1]]),
    members: [{ channel: 'presence-lobby', protocol: 'v4', uuid: 'u1', user: 'ann' }],
    sockets: 1,
  };
  const topic = `${p}:presence:{${k}}:topic:v4|presence-lobby`;
  await redis
    .multi()
    .zadd(`${p}:nodes`, 1, 'gw1')
    .hset(`${topic}:conns`, 'gw1/1', '{}')
    .zadd(`${topic}:byconn`, -1, 'gw1/1')
    .zadd(`${topic}:byident`, -1, 'ann')
    .hset(`${topic}:identconn`, 'ann', 'gw1/1')
    .zadd(`${topic}:idententries`, 0, '3:ann|x|gw1/1')
    .zadd(`${p}:presence:{${k}}:channel-names`, 0, 'presence-lobby')
    .zadd(`${p}:presence:{${k}}:by-node`, 0, 'gw1|v4|presence-lobby|gw1/1', 0, 'gw2|v4|presence-lobby|gw2/7')
    .sadd(`${p}:presence-node:{gw1}`, k)
    .sadd(`${p}:counts-node:{gw2}`, k)
    .hset(`${p}:counts:{${k}}:node:gw1`, 'presence-lobby', 1)
    .set(`${p}:history:{${k}|v4|presence-lobby}:meta`, 'x')
    .hset(`${p}:history:{${k}|v4|chaos-a}:meta`, 'e', 'E1', 'o', 3)
    .pexpire(`${p}:history:{${k}|v4|chaos-a}:meta`, 60_000)
    .hset(`${p}:presence:{${k}}:topic:v3|presence-v3:conns`, 'gw1/2', '{}')
    .set(`${p}:quota:{${k}}:publishes`, 3)
    .set('stranger', 1)
    .exec();

  const scan = await scanKeys(cluster, redis, truth);
  const problems = Object.fromEntries(
    scan.keys.filter((key) => key.problem).map((key) => [key.key, key.note]),
  );
  expect(problems).toEqual({
    [`${p}:presence:{${k}}:by-node`]: expect.stringContaining(
      'nodes not running: gw2|v4|presence-lobby|gw2/7',
    ),
    [`${p}:counts-node:{gw2}`]: 'belongs to gw2, which is not running',
    [`${p}:history:{${k}|v4|presence-lobby}:meta`]: 'no TTL (-1)',
    [`${p}:presence:{${k}}:topic:v3|presence-v3:conns`]: expect.stringContaining(
      'no presence subscription open',
    ),
    [`${p}:quota:{${k}}:publishes`]: expect.stringContaining('no quota is configured'),
    stranger: expect.stringContaining('not a documented key'),
  });
  const fine = scan.keys.filter((key) => !key.problem).map((key) => key.key);
  expect(fine).toEqual(
    expect.arrayContaining([
      `${p}:nodes`,
      `${topic}:conns`,
      `${topic}:idententries`,
      `${p}:history:{${k}|v4|chaos-a}:meta`,
    ]),
  );
  expect(scan.problems).toHaveLength(6);
});
