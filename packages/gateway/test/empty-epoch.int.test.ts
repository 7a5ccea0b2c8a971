/**
 * Channels without history on a real Redis, across two gateways (docs/protocol.md, "A channel
 * without history"): reading them stores nothing, a client that read one resumes from its empty
 * epoch with exactly what it missed while it can be told, and `recovered: false` otherwise; a
 * Redis restart says so once per subscription, never in a loop.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { isEmptyEpoch } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

let redis: RedisServer;
let admin: Redis;
let a: TestGateway;
let b: TestGateway;
let key: ApiKeyRecord;
/** A key whose history lives 1 s after its latest publication. */
let brief: ApiKeyRecord;
const clients: TestClient[] = [];

interface Position {
  channel: string;
  epoch: string;
  offset: number;
  missed: number;
  recovered?: boolean;
}

const at = async (node: TestGateway, path: string, query: Record<string, string>, record = key) => {
  const client = await connectClient(node.wsUrl(path, { api_key: record.key, ...query }));
  clients.push(client);
  return client;
};
const positionOf = async (client: TestClient): Promise<Position> =>
  (await client.nextEvent('system::position')).json!['data'] as Position;
const positionsOf = (client: TestClient): Position[] =>
  client.received
    .filter((f) => f.json?.['event'] === 'system::position')
    .map((f) => f.json!['data'] as Position);
const publish = async (channel: string, message: unknown, record = key) => {
  const reply = await postJson(`${a.httpUrl}/api/v4/publish`, {
    key: record.key,
    secret: record.secret,
    channel,
    message,
  });
  expect(reply.status).toBe(200);
};
const closed = async (client: TestClient) => {
  client.close();
  await client.closed;
};

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `e${randomBytes(4).toString('hex')}` };
  [a, b] = await Promise.all([startGateway({ env }), startGateway({ env })]);
  key = await createTestKey(a!.engine);
  brief = await createTestKey(a!.engine, { history: { ttlSeconds: 1 } });
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  admin.disconnect();
  await redis.stop();
});

describe('channels without history', () => {
  it('are read without storing anything: recover=1 sockets, V4 subscribes and POST /api/history', async () => {
    // The key's counts and the nodes' records exist once a socket is open; channels add none.
    const warm = await at(a, '/v4/warm-up', { recover: '1' });
    await positionOf(warm);
    await positionOf(await at(b, '/v3/warm-up', { recover: '1' }));
    const before = await admin.dbsize();
    const beforeKeys = await admin.keys('*');
    const names = Array.from({ length: 30 }, () => `stranger-${randomBytes(6).toString('hex')}`);
    const sockets = await Promise.all(
      names.slice(0, 10).map((name, i) => at(i % 2 ? a : b, `/v3/${name}`, { recover: '1' })),
    );
    for (const socket of sockets) expect(isEmptyEpoch((await positionOf(socket)).epoch)).toBe(true);
    for (const name of names.slice(10, 20)) {
      warm.send(JSON.stringify({ event: 'system::subscribe', data: { channel: name, recover: true } }));
      const position = await warm.next(
        (f) => f.json?.['event'] === 'system::position' && f.json['system::channel'] === name,
      );
      expect(isEmptyEpoch((position.json!['data'] as Position).epoch)).toBe(true);
    }
    for (const name of names.slice(20)) {
      const reply = await postJson(`${b.httpUrl}/api/history`, {
        key: key.key,
        secret: key.secret,
        channel: name,
      });
      expect(reply.status).toBe(200);
    }
    expect(await admin.keys('*history*')).toEqual([]);
    if ((await admin.dbsize()) !== before) expect(await admin.keys('*')).toEqual(beforeKeys);
    expect(await admin.dbsize()).toBe(before);
  });

  it('resume from their empty epoch while still empty: recovered, nothing missed', async () => {
    const first = await at(a, '/v4/still-empty', { recover: '1' });
    const read = await positionOf(first);
    await closed(first);
    const again = await at(b, '/v4/still-empty', { since: '0', epoch: read.epoch });
    expect(await positionOf(again)).toEqual({ ...read, recovered: true, missed: 0 });
  });

  it('resume from their empty epoch after the first publications: recovered with exactly those', async () => {
    const first = await at(a, '/v4/first-ones', { recover: '1' });
    const read = await positionOf(first);
    await closed(first);
    for (const n of [1, 2, 3]) await publish('first-ones', { event: 'n', data: n });
    const again = await at(b, '/v4/first-ones', { since: '0', epoch: read.epoch });
    const position = await positionOf(again);
    expect(position).toEqual({
      channel: 'first-ones',
      epoch: expect.not.stringMatching(/^_e/) as unknown,
      offset: 3,
      recovered: true,
      missed: 3,
    });
    for (const n of [1, 2, 3])
      expect((await again.next()).text).toBe(`{"event":"n","data":${n},"system::offset":${n}}`);
    await publish('first-ones', { event: 'n', data: 4 });
    expect((await again.next()).text).toBe('{"event":"n","data":4,"system::offset":4}');
  });

  it('resume from an empty epoch read longer ago than the TTL: recovered false', async () => {
    const first = await at(a, '/v4/aged', { recover: '1' }, brief);
    const read = await positionOf(first);
    await closed(first);
    // An empty epoch holds for the key's TTL (1 s) after its read: let it pass.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await at(b, '/v4/aged', { since: '0', epoch: read.epoch }, brief);
    expect(await positionOf(again)).toMatchObject({ offset: 0, recovered: false, missed: 0 });
  });

  it('after a Redis restart: one recovered: false per open subscription, then quiet; resumes from the old generation are false', async () => {
    const names = ['quiet-1', 'quiet-2', 'quiet-3'];
    const open = await Promise.all(
      names.map((name, i) => at(i % 2 ? a : b, `/v4/${name}`, { recover: '1' })),
    );
    const read = await Promise.all(open.map(positionOf));
    const gone = await at(a, '/v4/quiet-gone', { recover: '1' });
    const goneRead = await positionOf(gone);
    await closed(gone);

    await redis.restart();
    await waitFor(
      'both gateways back on Redis',
      () => a.engine.isAvailable() && b.engine.isAvailable(),
      10_000,
    );
    // The restart lost the key's record with the rest; store it again.
    await createTestKey(a.engine, key);
    // Each open subscription is told once: the restart may have lost publications it never got.
    for (const client of open) await client.next((f) => f.json?.['event'] === 'system::position');
    // Then a fresh subscriber joins (its read is compared with the node's stream), a publication
    // passes, and no subscriber gets another notice but its channel's first epoch.
    const late = await at(a, '/v4/quiet-1', { recover: '1' });
    await positionOf(late);
    await publish('quiet-1', { event: 'after' });
    await open[0]!.nextEvent('after');
    await late.nextEvent('after');
    for (const [i, client] of open.entries()) {
      const positions = positionsOf(client);
      expect(positions[0]).toEqual(read[i]);
      expect(positions[1]).toMatchObject({ offset: 0, recovered: false, missed: 0 });
      expect(isEmptyEpoch(positions[1]!.epoch)).toBe(true);
      expect(positions.slice(2)).toEqual(
        i === 0 ? [expect.objectContaining({ offset: 0, recovered: true })] : [],
      );
    }
    expect(positionsOf(late).slice(1)).toEqual([expect.objectContaining({ offset: 0, recovered: true })]);
    // A client that read before the restart and resumes after it: its empty epoch is of the
    // master's previous generation, which cannot vouch for anything now.
    const back = await at(b, '/v4/quiet-gone', { since: '0', epoch: goneRead.epoch });
    expect(await positionOf(back)).toMatchObject({ offset: 0, recovered: false });
    // One resuming from the position it was told after the restart is recovered.
    const told = positionsOf(open[1]!)[1]!;
    const resumed = await at(a, `/v4/${names[1]!}`, { since: '0', epoch: told.epoch });
    expect(await positionOf(resumed)).toMatchObject({ epoch: told.epoch, offset: 0, recovered: true });
  }, 30_000);
});
