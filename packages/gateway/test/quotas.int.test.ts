import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { TestClient, connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestGateway } from '@switchboard/testing';

let redis: RedisServer;
let gateways: TestGateway[] = [];
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  // Defaults every key without its own `limits` gets; the tests' keys override them.
  const env = { REDIS_URL: redis.url, MAX_CONNECTIONS_PER_KEY: '1', MESSAGES_PER_DAY_PER_KEY: '1000000' };
  gateways = await Promise.all([startGateway({ env }), startGateway({ env })]);
}, 30_000);
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await redis.stop();
});

const gw = (node: number): TestGateway => gateways[node]!;
const publish = (node: number, key: ApiKeyRecord, message: string) =>
  postJson(`${gw(node).httpUrl}/api/publish`, { key: key.key, secret: key.secret, channel: 'room', message });
const connect = async (node: number, key: ApiKeyRecord, path = '/v3/room'): Promise<TestClient> => {
  const client = await connectClient(gw(node).wsUrl(path, { api_key: key.key }));
  clients.push(client);
  return client;
};
const open = (node: number, key: ApiKeyRecord, path = '/v3/room'): TestClient => {
  const client = new TestClient(gw(node).wsUrl(path, { api_key: key.key }));
  clients.push(client);
  return client;
};

describe('per-key quotas, counted across two gateways on one Redis', () => {
  it('apiRequestsPerSecond: the fourth request of a second is refused whichever gateway gets it', async () => {
    const key = await createTestKey(gw(0).engine, { limits: { apiRequestsPerSecond: 3 } });
    const other = await createTestKey(gw(0).engine);
    const members = (node: number, k: ApiKeyRecord) =>
      postJson(`${gw(node).httpUrl}/api/members`, { key: k.key, secret: k.secret, channel: 'room' });
    // Alternating gateways: per-node counting would admit six before the first refusal.
    let accepted = 0;
    let refused: Awaited<ReturnType<typeof members>> | undefined;
    for (let i = 0; i < 8 && !refused; i++) {
      const response = await members(i % 2, key);
      if (response.status === 200) accepted++;
      else refused = response;
    }
    expect(accepted).toBe(3);
    expect(refused?.status).toBe(429);
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect(refused?.body).toEqual({
      success: false,
      error:
        'Rate limit exceeded: more than 3 cluster API requests per second for this API key (apiRequestsPerSecond)',
      code: 'SB_RATE_LIMITED',
    });
    expect((await members(1, other)).status).toBe(200);
  });

  it('publishesPerSecond: REST gets 429 on the other gateway, a client frame an error frame and 4029', async () => {
    const key = await createTestKey(gw(0).engine, { limits: { publishesPerSecond: 2 } });
    const sender = await connect(1, key);
    expect((await publish(0, key, 'a')).status).toBe(200);
    expect((await publish(0, key, 'b')).status).toBe(200);
    const text =
      'Rate limit exceeded: more than 2 publishes per second for this API key (publishesPerSecond)';
    const refused = await publish(1, key, 'c');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body).toEqual({ success: false, error: text, code: 'SB_RATE_LIMITED' });
    sender.send('d');
    expect((await sender.next((frame) => frame.json?.['error'] !== undefined)).json).toEqual({ error: text });
    expect(await sender.closed).toEqual({ code: 4029, reason: text });
    await waitFor('the log holds the two accepted publishes', async () => {
      return (await gw(0).engine.logs.recent(key.key)).length === 2;
    });
  });

  it('messagesPerDay: used up by REST and client messages on both gateways, then refused with a clear text', async () => {
    // connections 0: unlimited for this key although MAX_CONNECTIONS_PER_KEY is 1.
    const key = await createTestKey(gw(0).engine, { limits: { messagesPerDay: 3, connections: 0 } });
    const listener = await connect(0, key);
    const sender = await connect(1, key);
    sender.send('one');
    expect((await listener.next((frame) => frame.text === 'one')).text).toBe('one');
    expect((await publish(0, key, 'two')).status).toBe(200);
    expect((await publish(1, key, 'three')).status).toBe(200);
    const text =
      'Daily message quota used up: 3 messages per day for this API key (messagesPerDay); it resets at 00:00 UTC';
    const refused = await publish(1, key, 'four');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ success: false, error: text, code: 'SB_RATE_LIMITED' });
    const retryAfter = Number(refused.headers.get('retry-after'));
    const untilMidnight = Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(untilMidnight + 1);
    sender.send('five');
    expect((await sender.next((frame) => frame.json?.['error'] !== undefined)).json).toEqual({ error: text });
    expect((await sender.closed).code).toBe(4029);
    const other = await createTestKey(gw(0).engine);
    expect((await publish(0, other, 'free')).status).toBe(200);
  });

  it('connections: a key override wins over MAX_CONNECTIONS_PER_KEY across gateways', async () => {
    const key = await createTestKey(gw(0).engine, { limits: { connections: 2 } });
    await connect(0, key);
    await connect(1, key, '/v4/other');
    const third = open(0, key, '/v3/third');
    expect((await third.next()).json).toEqual({
      error: 'Connection limit reached for this API key (limit 2)',
    });
    expect((await third.closed).code).toBe(4529);
  });
});

describe('NEW_CONNECTIONS_PER_SECOND_PER_IP and TRUSTED_PROXIES', () => {
  let plain: TestGateway;
  let proxied: TestGateway;
  let key: ApiKeyRecord;
  beforeAll(async () => {
    plain = await startGateway({ env: { NEW_CONNECTIONS_PER_SECOND_PER_IP: '2' } });
    proxied = await startGateway({
      env: { NEW_CONNECTIONS_PER_SECOND_PER_IP: '2', TRUSTED_PROXIES: '127.0.0.1,::1' },
    });
  });
  afterAll(async () => {
    await Promise.all([plain.close(), proxied.close()]);
  });

  /** Opens a socket with `X-Forwarded-For`; resolves 'open' or the HTTP status that refused it. */
  const attempt = async (node: TestGateway, forwardedFor: string, apiKey: string): Promise<string> => {
    const client = new TestClient(node.wsUrl('/v3/room', { api_key: apiKey }), {
      'x-forwarded-for': forwardedFor,
    });
    clients.push(client);
    try {
      await client.opened;
      return 'open';
    } catch (error) {
      return /Unexpected server response: (\d+)/.exec(String(error))?.[1] ?? String(error);
    }
  };

  it('refuses a handshake flood from one address with 429, before the key is even looked up', async () => {
    key = await createTestKey(plain.engine);
    // Without trusted proxies X-Forwarded-For is ignored: every socket comes from 127.0.0.1.
    expect(await attempt(plain, '192.0.2.1', key.key)).toBe('open');
    expect(await attempt(plain, '192.0.2.2', key.key)).toBe('open');
    expect(await attempt(plain, '192.0.2.3', 'no-such-key')).toBe('429');
  });

  it('behind a trusted proxy counts the X-Forwarded-For address, and a forged entry left of it changes nothing', async () => {
    key = await createTestKey(proxied.engine);
    expect(await attempt(proxied, '192.0.2.1', key.key)).toBe('open');
    expect(await attempt(proxied, '198.51.100.7, 192.0.2.1', key.key)).toBe('open');
    expect(await attempt(proxied, '203.0.113.1, 192.0.2.1', key.key)).toBe('429');
    expect(await attempt(proxied, '192.0.2.2', key.key)).toBe('open');
  });
});
