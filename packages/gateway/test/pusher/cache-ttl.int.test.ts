import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import {
  connectClient,
  createTestKey,
  pusherBackend,
  pusherSocketUrl,
  startGateway,
} from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';
import type Pusher from 'pusher';

/**
 * A cache channel's last event is kept `PUSHER_CACHE_TTL_SECONDS` (Pusher's 30 minutes by
 * default), apart from `HISTORY_TTL_SECONDS` and a key's history size (docs/pusher.md, "Cache
 * channels"): what Redis holds, and what a late subscriber gets.
 */

let redis: RedisServer;
let admin: Redis;
let gateway: TestGateway;
let app: ApiKeyRecord;
const prefix = `cache-${randomBytes(4).toString('hex')}`;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  gateway = await startGateway({
    env: {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      HISTORY_TTL_SECONDS: '60',
      PUSHER_CACHE_TTL_SECONDS: '900',
    },
  });
  // A key that keeps no history: cache channels still keep their last event.
  app = await createTestKey(gateway.engine, { history: { size: 0 } });
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await gateway?.close();
  admin?.disconnect();
  await redis?.stop();
});

const sdk = (): Pusher => pusherBackend(app, gateway.port);

/** Seconds Redis keeps the channel's stored events (its history stream LIST); -2 when there is none. */
async function streamTtl(channel: string): Promise<number> {
  const [name] = await admin.keys(`${prefix}:history:{${app.key}|pusher|${channel}}:stream`);
  return name === undefined ? -2 : admin.ttl(name);
}

async function subscribe(channel: string): Promise<TestClient> {
  const client = await connectClient(pusherSocketUrl(gateway.port, app.key));
  clients.push(client);
  await client.nextEvent('pusher:connection_established');
  client.send({ event: 'pusher:subscribe', data: { channel } });
  return client;
}

it('keeps the last event of a cache channel PUSHER_CACHE_TTL_SECONDS, whatever the history settings', async () => {
  await sdk().trigger('cache-kept', 'price', { eur: 7 });
  await sdk().trigger('plain-channel', 'price', { eur: 7 });
  const ttl = await streamTtl('cache-kept');
  expect(ttl).toBeGreaterThan(60);
  expect(ttl).toBeLessThanOrEqual(900);
  // Not a cache channel: the key keeps no history for it.
  expect(await streamTtl('plain-channel')).toBe(-2);

  const late = await subscribe('cache-kept');
  const replayed = await late.nextEvent('price');
  expect(JSON.parse(replayed.json?.['data'] as string)).toEqual({ eur: 7 });
  const info = await sdk().get({ path: '/channels/cache-kept', params: { info: 'cache' } });
  expect(await info.json()).toEqual({ occupied: true, cache: { data: '{"eur":7}', ttl: 900 } });
});
