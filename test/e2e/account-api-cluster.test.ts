import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '@switchboard/cli';
import type { ApiKeyRecord, Engine } from '@switchboard/core';
import { createAccountApi } from '@switchboard/account-api';
import { startRedis } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';
import type { Express } from 'express';
import { until } from './support/until';

/**
 * Two gateway nodes write to one Redis; the account API, a separate service with its own engine,
 * reads counts, members and logs of both without asking either node.
 */

let redis: RedisServer;
let nodes: TestGateway[] = [];
let accountEngine: Engine;
let account: Express;
let keyA: ApiKeyRecord;
let keyB: ApiKeyRecord;
const clients: TestClient[] = [];

const open = async (node: TestGateway, path: string, query: Record<string, string>, key = keyA) => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};

const get = (path: string, key = keyA) =>
  request(account).get(path).set({ key: key.key, secret: key.secret });

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `e2e-${randomBytes(4).toString('hex')}` };
  nodes = [await startGateway({ env }), await startGateway({ env })];
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent', ACCOUNT_PORT: '0' });
  accountEngine = await createEngine(config, { logger: createLogger({ level: 'silent' }) });
  account = createAccountApi({ engine: accountEngine, logger: createLogger({ level: 'silent' }), config });
  keyA = await createTestKey(accountEngine);
  keyB = await createTestKey(accountEngine);
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const node of nodes) await node.close();
  await accountEngine?.close();
  await redis?.stop();
});

describe('account API over a two-node cluster', () => {
  test('counts, members and logs of both nodes, summed; nothing of key A visible with key B', async () => {
    const [one, two] = nodes as [TestGateway, TestGateway];
    const alice = await open(one, '/v3/room-1', { presence: '1', user: 'alice', uuid: 'u-alice' });
    await alice.nextEvent('system:member_list');
    const bob = await open(one, '/v4/room-1', { presence: '1', user: 'bob', uuid: 'u-bob' });
    await bob.nextEvent('system::member_list');
    const anon = await open(two, '/v3/room-1', { presence: '1', uuid: 'u-anon' });
    await anon.nextEvent('system:member_list');
    const carol = await open(two, '/v4/lobby', { presence: '1', user: 'carol', uuid: 'u-carol' });
    await carol.nextEvent('system::member_list');
    // A V4 socket counts once for each channel it is subscribed to.
    carol.send({
      event: 'system::subscribe',
      data: { channel: 'room-1', presence: true, user: 'carol', uuid: 'u-carol' },
    });
    await carol.nextEvent('system::subscribe_success');
    const other = await open(two, '/v3/room-1', {}, keyB);

    const counts = await until(
      'counts of both nodes',
      async () => (await get('/api/connections').expect(200)).body as unknown,
      (body) => JSON.stringify(body).includes('"connection_count":4'),
    );
    expect(counts).toEqual([
      { channel_id: 'room-1', room_id: 'room-1', connection_count: 4 },
      { channel_id: 'lobby', room_id: 'lobby', connection_count: 1 },
    ]);
    await get('/api/connections/sum').expect(200, { connection_count: 5 });
    await get('/api/connections?page=2&limit=1').expect(200, {
      data: [{ channel_id: 'lobby', room_id: 'lobby', connection_count: 1 }],
      total: 2,
      page: 2,
      limit: 1,
      totalPages: 2,
    });

    const members = (await get('/api/members').expect(200)).body as Record<
      string,
      Array<Record<string, unknown>>
    >;
    expect(Object.keys(members)).toEqual(['lobby', 'room-1']);
    expect(members['lobby']).toEqual([{ uuid: 'u-carol', user: 'carol', protocol: 'v4' }]);
    const room = members['room-1'] ?? [];
    expect(
      room
        .filter((m) => m['protocol'] === 'v3')
        .map((m) => m['uuid'])
        .sort(),
    ).toEqual(['u-alice', 'u-anon']);
    expect(
      room
        .filter((m) => m['protocol'] === 'v4')
        .map((m) => m['user'])
        .sort(),
    ).toEqual(['bob', 'carol']);
    expect(room.find((m) => m['uuid'] === 'u-anon')).toEqual({ uuid: 'u-anon', protocol: 'v3' });

    // One message published through node one, one relayed from a client of node two.
    const published = await postJson(`${one.httpUrl}/api/publish`, {
      key: keyA.key,
      secret: keyA.secret,
      channel: 'room-1',
      message: { event: 'hello', data: 'from api' },
    });
    expect(published.body).toEqual({ success: true, offset: 1, epoch: expect.any(String) });
    await anon.next((f) => f.text.includes('from api'));
    carol.send({ event: 'typing', data: 'from carol', 'system::channel': 'room-1' });
    await bob.next((f) => f.text.includes('from carol'));
    const logs = await until(
      'logs of both nodes',
      async () => (await get('/api/logs').expect(200)).body as Array<Record<string, unknown>>,
      (records) => records.length === 2,
    );
    expect(logs[0]?.['message']).toContain('from carol');
    expect(logs[0]).toMatchObject({
      channel: 'room-1',
      protocol: 'v4',
      source: 'client',
      uuid: 'u-carol',
      user: 'carol',
    });
    expect(logs[1]).toMatchObject({
      channel: 'room-1',
      protocol: 'v3',
      source: 'api',
      message: '{"event":"hello","data":"from api"}',
    });

    await get('/api/connections', keyB).expect(200, [
      { channel_id: 'room-1', room_id: 'room-1', connection_count: 1 },
    ]);
    await get('/api/connections/sum', keyB).expect(200, { connection_count: 1 });
    await get('/api/members', keyB).expect(200, {});
    await get('/api/logs', keyB).expect(200, []);

    // Leaving sockets are taken out of counts and members on every node's behalf.
    alice.close();
    other.close();
    await until(
      'counts after two sockets left',
      async () => (await get('/api/connections/sum').expect(200)).body as { connection_count: number },
      (body) => body.connection_count === 4,
    );
    await get('/api/connections/sum', keyB).expect(200, { connection_count: 0 });
    const after = (await get('/api/members').expect(200)).body as Record<string, Array<{ uuid: string }>>;
    expect(after['room-1']?.map((m) => m.uuid)).not.toContain('u-alice');
  });
});
