/**
 * The account API's actions (docs/console.md, "How publish and kick reach the product") against
 * a real gateway sharing the all-in-one memory engine: what the console's publish form, kick
 * buttons, history and member lists do, checked on real WebSocket clients.
 */
import request from 'supertest';
import type { Express } from 'express';
import { createLogger, createMemoryEngine, createMemoryState, loadConfig } from '@switchboard/core';
import type { ApiKeyRecord, MemoryState } from '@switchboard/core';
import { createAccountApi } from '@switchboard/account-api';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';

let state: MemoryState;
let gateway: TestGateway;
let account: Express;
let keyA: ApiKeyRecord;
let keyB: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  state = createMemoryState();
  gateway = await startGateway({ memoryState: state });
  const config = loadConfig({ ACCOUNT_PORT: '0', LOG_LEVEL: 'silent', NODE_ID: gateway.config.nodeId });
  account = createAccountApi({
    engine: createMemoryEngine(state),
    logger: createLogger({ level: 'silent' }),
    config,
  });
  keyA = await createTestKey(gateway.engine);
  keyB = await createTestKey(gateway.engine);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await gateway.close();
});

const open = async (path: string, query: Record<string, string>, key = keyA): Promise<TestClient> => {
  const client = await connectClient(gateway.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};
const auth = (key: ApiKeyRecord) => ({ key: key.key, secret: key.secret });
const post = (path: string, body: object, key = keyA) =>
  request(account).post(path).set(auth(key)).send(body);
const get = (path: string, key = keyA) => request(account).get(path).set(auth(key));

describe('account API actions on a live gateway', () => {
  test('POST /api/messages reaches the protocol it names, is logged and kept in the history', async () => {
    const v4 = await open('/v4/pub', { presence: '1', user: 'alice' });
    const v3 = await open('/v3/pub', {});
    await v4.nextEvent('system::member_list');
    const json = await post('/api/messages', { channel: 'pub', message: { event: 'hi', data: 1 } }).expect(
      200,
    );
    expect(json.body).toEqual({ success: true, offset: 1, epoch: expect.any(String) });
    expect((await v4.next((f) => f.json?.['event'] === 'hi')).text).toBe('{"event":"hi","data":1}');
    await post('/api/messages', { channel: 'pub', protocol: 'v3', message: 'plain "text"' }).expect(200);
    // Its first frame: the V4 publish before it did not reach this V3 connection.
    expect((await v3.next()).text).toBe('plain "text"');

    const logs = await get('/api/logs').expect(200);
    expect(logs.body.slice(0, 2).map((e: { message: string }) => e.message)).toEqual([
      'plain "text"',
      '{"event":"hi","data":1}',
    ]);
    const history = await get('/api/history?channel=pub').expect(200);
    expect(history.body.publications).toEqual([
      { offset: 1, message: '{"event":"hi","data":1}', timestamp: expect.any(String) },
    ]);
    const v3History = await get('/api/history?channel=pub&protocol=v3').expect(200);
    expect(v3History.body.publications.map((p: { message: string }) => p.message)).toEqual(['plain "text"']);
  });

  test("console publishes count against the key's publication quotas, shared with the cluster API", async () => {
    const limited = await createTestKey(gateway.engine, { limits: { messagesPerDay: 2 } });
    const restPublish = () =>
      fetch(`${gateway.httpUrl}/api/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          key: limited.key,
          secret: limited.secret,
          channelId: 'quota',
          message: 'rest',
        }),
      });
    expect((await restPublish()).status).toBe(200);
    await post('/api/messages', { channel: 'quota', message: 'console' }, limited).expect(200);
    // The day's two messages are used up, whichever API sent them.
    const refused = await post('/api/messages', { channel: 'quota', message: 'over' }, limited).expect(429);
    expect(refused.body).toEqual({
      error: expect.stringContaining('messagesPerDay'),
      code: 'SB_RATE_LIMITED',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await restPublish()).status).toBe(429);
  });

  test('bad bodies are 400s that name the problem', async () => {
    const missing = await post('/api/messages', { channel: 'pub' }).expect(400);
    expect(missing.body).toEqual({ error: 'Missing message from payload', code: 'SB_MISSING_MESSAGE' });
    const bad = await post('/api/messages', { channel: 'no spaces', message: 1, protocol: 'v5' }).expect(400);
    expect(bad.body.error).toMatch(/channel.*1 to 128 characters/);
    expect(bad.body.error).toMatch(/protocol.*"v3" or "v4"/);
    const extra = await post('/api/messages', { channel: 'pub', message: 1, key: 'x' }).expect(400);
    expect(extra.body.error).toMatch(/Unknown field "key"/);
    const everyone = await post('/api/kicks', {}).expect(400);
    expect(everyone.body.error).toMatch(/at least one of channel, uuid and user/);
    const notJson = await request(account)
      .post('/api/kicks')
      .set(auth(keyA))
      .set('content-type', 'application/json')
      .send('{"channel":')
      .expect(400);
    expect(notJson.body.code).toBe('SB_BAD_JSON');
  });

  test('POST /api/kicks closes the selected connections with 4509 and no other', async () => {
    const alice = await open('/v4/kick-room', { presence: '1', user: 'alice', uuid: 'dev-alice' });
    const bob = await open('/v4/kick-room', { presence: '1', user: 'bob' });
    const elsewhere = await open('/v4/other-room', { presence: '1', user: 'alice' });
    const otherKey = await open('/v4/kick-room', { presence: '1', user: 'alice' }, keyB);
    await alice.nextEvent('system::member_list');

    await post('/api/kicks', { channel: 'kick-room', user: 'alice', reason: 'Console test' }).expect(200);
    expect(await alice.closed).toMatchObject({ code: 4509, reason: 'Console test' });
    await post('/api/kicks', { uuid: 'no-such-connection' }).expect(200);
    await post('/api/messages', { channel: 'kick-room', message: 'still here' }).expect(200);
    await bob.next((f) => f.text === 'still here');
    await post('/api/messages', { channel: 'other-room', message: 'still here too' }).expect(200);
    await elsewhere.next((f) => f.text === 'still here too');
    await post('/api/messages', { channel: 'kick-room', message: 'other key' }, keyB).expect(200);
    await otherKey.next((f) => f.text === 'other key');

    await post('/api/kicks', { channel: 'kick-room' }).expect(200);
    expect((await bob.closed).code).toBe(4509);
  });

  test('GET /api/channel-members pages one channel per protocol', async () => {
    for (const user of ['u1', 'u2', 'u3']) await open('/v4/roster', { presence: '1', user });
    await open('/v3/roster', { presence: '1', user: 'old' });
    await open('/v3/roster', { presence: '1', user: 'new' });
    const read = async (query: string) =>
      (await get(`/api/channel-members?channel=roster${query}`).expect(200)).body;
    const first = await read('&limit=2');
    expect(first).toMatchObject({ total: 3, page: 1, limit: 2, totalPages: 2 });
    expect(first.data.map((m: { user: string }) => m.user)).toEqual(['u3', 'u2']);
    expect((await read('&limit=2&page=2')).data.map((m: { user: string }) => m.user)).toEqual(['u1']);
    const v3 = await read('&protocol=v3&limit=1&page=2');
    expect(v3).toMatchObject({ total: 2, totalPages: 2, data: [{ user: 'old', protocol: 'v3' }] });
    expect((await get('/api/channel-members?channel=roster', keyB).expect(200)).body.total).toBe(0);
    const deep = await get('/api/channel-members?channel=roster&protocol=v3&page=101&limit=100').expect(400);
    expect(deep.body.error).toMatch(/10000 most recently active/);
  });
});
