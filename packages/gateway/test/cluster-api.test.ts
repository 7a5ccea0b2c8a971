import { useGateway } from './support/fixture';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestClient } from '@switchboard/testing';

const fx = useGateway();
const { open, call } = fx;

const member = async (path: string, query: Record<string, string>): Promise<TestClient> => {
  const client = await open(path, { presence: '1', ...query });
  await client.next((f) => String(f.json?.['event']).endsWith('member_list'));
  return client;
};

describe('POST /api/publish and /api/v4/publish', () => {
  it('accepts the SDK aliases channelId and roomId, and a JSON-encoded string message as that string', async () => {
    const client = await open('/v3/alias');
    expect((await call('/api/publish', { channelId: 'alias', message: '{"event":"a"}' })).body).toEqual({
      success: true,
      offset: 1,
      epoch: expect.any(String),
    });
    expect((await client.next()).text).toBe('{"event":"a"}');
    await call('/api/publish', { roomId: 'alias', message: 42 });
    expect((await client.next()).text).toBe('42');
  });

  it('answers 400 naming the problem for a missing message, channel or credentials', async () => {
    expect(await call('/api/publish', { channel: 'c' })).toMatchObject({
      status: 400,
      body: { success: false, error: 'Missing message from payload' },
    });
    expect(await call('/api/publish', { channel: 'c', message: null })).toMatchObject({
      status: 400,
      body: { error: 'Missing message from payload' },
    });
    expect(await call('/api/publish', { message: 'm' })).toMatchObject({
      status: 400,
      body: { error: 'Missing field "channel"' },
    });
    expect((await call('/api/publish', { channel: 'no spaces', message: 'm' })).body['error']).toContain(
      'Invalid field "channel"',
    );
    expect(
      await postJson(`${fx.node.httpUrl}/api/publish`, { secret: 'x', channel: 'c', message: 1 }),
    ).toMatchObject({ status: 400, body: { error: 'Missing field "key"' } });
    expect(
      await postJson(`${fx.node.httpUrl}/api/publish`, {
        key: fx.key.key,
        secret: 5,
        channel: 'c',
        message: 1,
      }),
    ).toMatchObject({ status: 400, body: { error: 'Invalid field "secret": must be a string' } });
  });

  it('answers 401 for an unknown key or a wrong secret', async () => {
    expect(await call('/api/publish', { channel: 'c', message: 1, secret: 'wrong' })).toMatchObject({
      status: 401,
      body: { success: false, error: 'Unknown API key or wrong secret' },
    });
    expect((await call('/api/publish', { key: 'unknown', channel: 'c', message: 1 })).status).toBe(401);
  });

  it('appends publishes to the key log', async () => {
    await call('/api/v4/publish', { channel: 'logged', message: { event: 'l' } });
    const [latest] = await fx.node.engine.logs.recent(fx.key.key, 1);
    expect(latest).toMatchObject({
      channel: 'logged',
      protocol: 'v4',
      source: 'api',
      message: '{"event":"l"}',
    });
    expect(new Date(latest!.timestamp).toISOString()).toBe(latest!.timestamp);
  });

  it('never delivers across keys', async () => {
    const other = await createTestKey(fx.node.engine);
    const outsider = await open('/v3/shared-name', {}, other.key);
    const insider = await open('/v3/shared-name');
    await call('/api/publish', { channel: 'shared-name', message: 'mine' });
    expect((await insider.next()).text).toBe('mine');
    await outsider.expectSilence();
  });
});

describe('POST /api/v4/members', () => {
  it('lists identities deduplicated, most recently active first, with the true count', async () => {
    await member('/v4/m1', { user: 'ann', uuid: 'a1' });
    await member('/v4/m1', { user: 'bob', uuid: 'b1' });
    await member('/v4/m1', { user: 'ann', uuid: 'a2' });
    await member('/v4/m1', { uuid: 'anon-1' });
    await open('/v4/m1', { user: 'no-presence' });
    expect((await call('/api/v4/members', { channel: 'm1' })).body).toEqual({
      success: true,
      members: ['anon-1', 'ann', 'bob'],
      count: 3,
    });
  });

  it('paginates with page/limit, caps limit at 100, and gives [] past the end', async () => {
    for (let i = 0; i < 5; i++) await member('/v4/pg', { user: `u${i}` });
    expect((await call('/api/v4/members', { channel: 'pg', paginate: 1, page: 2, limit: 2 })).body).toEqual({
      success: true,
      members: ['u2', 'u1'],
      count: 5,
      page: 2,
      limit: 2,
      totalPages: 3,
    });
    expect((await call('/api/v4/members', { channel: 'pg', paginate: 1, limit: 1000 })).body).toMatchObject({
      limit: 100,
      page: 1,
      totalPages: 1,
    });
    expect((await call('/api/v4/members', { channel: 'pg', paginate: 1, page: 9 })).body).toMatchObject({
      members: [],
      count: 5,
    });
    expect((await call('/api/v4/members', { channel: 'pg', paginate: 1, page: 0 })).status).toBe(400);
    expect((await call('/api/v4/members', { channel: 'pg', paginate: 1, limit: -1 })).body['error']).toBe(
      'Invalid field "limit": must be 1 or more',
    );
    expect((await call('/api/v4/members', {})).body['error']).toBe('Missing field "channel"');
  });

  it('lists at most the 200 most recently active without pagination', async () => {
    const small = await startGateway({ memoryState: createMemoryState(), env: { ROSTER_LIMIT: '3' } });
    try {
      const k = await createTestKey(small.engine);
      for (let i = 0; i < 5; i++) {
        const c = await connectClient(
          small.wsUrl('/v4/big', { api_key: k.key, presence: '1', user: `u${i}` }),
        );
        fx.track(c);
        await c.nextEvent('system::member_list');
      }
      expect(
        (await postJson(`${small.httpUrl}/api/v4/members`, { key: k.key, secret: k.secret, channel: 'big' }))
          .body,
      ).toEqual({
        success: true,
        members: ['u4', 'u3', 'u2'],
        count: 5,
      });
    } finally {
      await small.close();
    }
  });
});

describe('POST /api/members (V3)', () => {
  it('lists member objects of one channel, or of every channel of the key', async () => {
    await member('/v3/v3a', { user: 'ann', uuid: 'a1' });
    await member('/v3/v3a', { user: 'ann', uuid: 'a2' });
    await member('/v3/v3b', { uuid: 'z' });
    const one = (await call('/api/members', { channel: 'v3a' })).body;
    expect(one['success']).toBe(true);
    expect(one['members']).toEqual(
      expect.arrayContaining([
        { uuid: 'a1', user: 'ann' },
        { uuid: 'a2', user: 'ann' },
      ]),
    );
    const all = (await call('/api/members', {})).body['channels'] as Record<string, unknown>;
    expect(all['v3b']).toEqual([{ uuid: 'z' }]);
    expect(all['v3a']).toHaveLength(2);
  });

  it('lists a channel named __proto__ like any other', async () => {
    await member('/v3/__proto__', { uuid: 'proto-member' });
    // JSON.parse keeps "__proto__" as an own property, as any JSON client sees it.
    const channels = (await call('/api/members', {})).body['channels'] as object;
    expect(Object.entries(channels)).toContainEqual(['__proto__', [{ uuid: 'proto-member' }]]);
  });

  it('caps members at ROSTER_LIMIT with the true count, and pages channels by name', async () => {
    const small = await startGateway({ memoryState: createMemoryState(), env: { ROSTER_LIMIT: '2' } });
    try {
      const k = await createTestKey(small.engine);
      const ask = (body: Record<string, unknown>) =>
        postJson(`${small.httpUrl}/api/members`, { key: k.key, secret: k.secret, ...body });
      for (const [channel, uuid] of [
        ['crowd', 'c1'],
        ['crowd', 'c2'],
        ['crowd', 'c3'],
        ['b', 'b1'],
        ['a', 'a1'],
      ]) {
        const c = fx.track(
          await connectClient(small.wsUrl(`/v3/${channel}`, { api_key: k.key, presence: '1', uuid: uuid! })),
        );
        await c.nextEvent('system:member_list');
      }
      expect((await ask({ channel: 'crowd' })).body).toEqual({
        success: true,
        members: [{ uuid: 'c3' }, { uuid: 'c2' }],
        count: 3,
      });
      expect((await ask({ page: 2, limit: 2 })).body).toEqual({
        success: true,
        channels: { crowd: [{ uuid: 'c3' }, { uuid: 'c2' }] },
        total: 3,
        page: 2,
        limit: 2,
        totalPages: 2,
      });
      expect(Object.keys((await ask({})).body['channels'] as object)).toEqual(['a', 'b', 'crowd']);
      expect((await ask({ limit: 0 })).status).toBe(400);
    } finally {
      await small.close();
    }
  });
});

describe('kicks', () => {
  const kicked = async (client: TestClient, reason = 'Connection closed by administrator'): Promise<void> => {
    expect((await client.next((f) => f.json?.['error'] !== undefined)).json).toEqual({ error: reason });
    expect(await client.closed).toEqual({ code: 4509, reason });
  };

  it('/api/kick closes every connection of the key, both versions, with the reason', async () => {
    const k = await createTestKey(fx.node.engine);
    const v3 = await open('/v3/k1', {}, k.key);
    const v4 = await open('/v4/k2', {}, k.key);
    const bystander = await open('/v3/k1');
    expect((await call('/api/kick', { reason: 'Maintenance' }, k)).body).toEqual({
      success: true,
      kicked: 2,
      complete: true,
    });
    await kicked(v3, 'Maintenance');
    await kicked(v4, 'Maintenance');
    await bystander.expectSilence();
  });

  it('/api/kick refuses uuid, user and channel with 400 instead of kicking everyone', async () => {
    const client = await open('/v3/safe');
    for (const field of ['uuid', 'user', 'channel']) {
      const response = await call('/api/kick', { [field]: 'x' });
      expect(response.status).toBe(400);
      expect(response.body['error']).toContain(`Invalid field "${field}"`);
    }
    await client.expectSilence();
  });

  it('/api/v4/kick by uuid or user matches no V3 connection, and its answer says so (kicked: 0)', async () => {
    const v3 = await open('/v3/old', { uuid: 'v3-dev', user: 'carl' });
    for (const selector of [{ uuid: 'v3-dev' }, { user: 'carl' }, { uuid: 'v3-dev', channel: 'old' }])
      expect((await call('/api/v4/kick', selector)).body).toEqual({
        success: true,
        kicked: 0,
        complete: true,
      });
    await v3.expectSilence();
  });

  it('/api/v4/kick by uuid, by user, by the pair, limited by channel', async () => {
    const byUuid = await open('/v4/t', { uuid: 'dev-1', user: 'ann' });
    const sameUser = await open('/v4/t', { uuid: 'dev-2', user: 'ann' });
    const other = await open('/v4/t', { uuid: 'dev-3', user: 'bob' });
    expect((await call('/api/v4/kick', { uuid: 'dev-1' })).body).toEqual({
      success: true,
      kicked: 1,
      complete: true,
    });
    await kicked(byUuid);
    expect((await call('/api/v4/kick', { uuid: 'dev-3', user: 'ann' })).body).toEqual({
      success: true,
      kicked: 0,
      complete: true,
    });
    await other.expectSilence();
    await sameUser.expectSilence();
    await call('/api/v4/kick', { user: 'ann', channel: 'elsewhere' });
    await sameUser.expectSilence();
    await call('/api/v4/kick', { user: 'ann', channel: 't' });
    await kicked(sameUser);
    await call('/api/v4/kick', { uuid: 'dev-3', user: 'bob' });
    await kicked(other);
  });

  it('/api/v4/kick on a secondary channel unsubscribes it and sends system::kicked; on the primary closes', async () => {
    const client = await open('/v4/main', { user: 'ann' });
    client.send({ event: 'system::subscribe', data: { channel: 'side' } });
    await client.nextEvent('system::subscribe_success');
    // A socket unsubscribed from the channel counts as kicked.
    expect((await call('/api/v4/kick', { channel: 'side', reason: 'bye side' })).body).toEqual({
      success: true,
      kicked: 1,
      complete: true,
    });
    expect((await client.nextEvent('system::kicked')).json).toEqual({
      event: 'system::kicked',
      data: { channel: 'side', reason: 'bye side' },
      'system::channel': 'side',
    });
    await call('/api/v4/publish', { channel: 'side', message: 'after kick' });
    await client.expectSilence((f) => f.text === 'after kick');
    await call('/api/v4/kick', { channel: 'main' });
    await kicked(client);
  });

  it('/api/v4/kick without uuid and user kicks V3 connections of the channel too', async () => {
    const v3 = await open('/v3/both');
    const v4 = await open('/v4/both');
    expect((await call('/api/v4/kick', { channel: 'both' })).body).toEqual({
      success: true,
      kicked: 2,
      complete: true,
    });
    await kicked(v3);
    await kicked(v4);
  });

  it('cuts the close reason to 123 bytes on a UTF-8 boundary; the error frame keeps the whole text', async () => {
    const client = await open('/v3/long');
    const reason = 'é'.repeat(100);
    await call('/api/kick', { reason });
    expect((await client.next()).json).toEqual({ error: reason });
    const closed = await client.closed;
    expect(closed.code).toBe(4509);
    expect(closed.reason).toBe('é'.repeat(61));
  });
});

describe('API rate limit', () => {
  it('answers 429 with Retry-After past API_REQUESTS_PER_SECOND per key, and carries nothing out', async () => {
    const limited = await startGateway({
      memoryState: createMemoryState(),
      env: { API_REQUESTS_PER_SECOND: '1' },
    });
    try {
      const k = await createTestKey(limited.engine);
      const other = await createTestKey(limited.engine);
      const body = (creds: ApiKeyRecord) => ({
        key: creds.key,
        secret: creds.secret,
        channel: 'r',
        message: 'm',
      });
      // Ten requests take far less than two seconds, so at least two share a one-second window.
      const responses = [];
      for (let i = 0; i < 10; i++) responses.push(await postJson(`${limited.httpUrl}/api/publish`, body(k)));
      const refused = responses.find((r) => r.status === 429);
      expect(refused?.headers.get('retry-after')).toBe('1');
      expect(refused?.body).toEqual({
        success: false,
        error:
          'Rate limit exceeded: more than 1 cluster API requests per second for this API key (apiRequestsPerSecond)',
        code: 'SB_RATE_LIMITED',
      });
      const accepted = responses.filter((r) => r.status === 200).length;
      expect((await limited.engine.logs.recent(k.key)).length).toBe(accepted);
      expect((await postJson(`${limited.httpUrl}/api/publish`, body(other))).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('HTTP errors and health', () => {
  it('answers health with ok', async () => {
    const response = await fetch(`${fx.node.httpUrl}/api/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });

  it('answers liveness at /api/live', async () => {
    const response = await fetch(`${fx.node.httpUrl}/api/live`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'alive' });
  });

  it('answers 404 for unknown paths and 405 with Allow for wrong methods', async () => {
    expect(await postJson(`${fx.node.httpUrl}/api/nope`, {})).toMatchObject({
      status: 404,
      body: { success: false, error: 'No such endpoint: POST /api/nope' },
    });
    const wrong = await fetch(`${fx.node.httpUrl}/api/publish`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(await wrong.json()).toMatchObject({ success: false });
    const health = await fetch(`${fx.node.httpUrl}/api/health`, { method: 'POST' });
    expect(health.status).toBe(405);
    expect(health.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers 400 for malformed JSON and non-object bodies, 413 over 64 KiB', async () => {
    expect((await postJson(`${fx.node.httpUrl}/api/publish`, '{"key":')).body['error']).toMatch(
      /^Request body is not valid JSON/,
    );
    expect((await postJson(`${fx.node.httpUrl}/api/publish`, '[1,2]')).body['error']).toBe(
      'Request body must be a JSON object',
    );
    expect((await postJson(`${fx.node.httpUrl}/api/publish`, '')).status).toBe(400);
    const badUtf8 = await fetch(`${fx.node.httpUrl}/api/publish`, {
      method: 'POST',
      body: Buffer.from([0x7b, 0xff, 0x7d]),
    });
    expect(badUtf8.status).toBe(400);
    expect(await badUtf8.json()).toMatchObject({ error: 'Request body is not valid UTF-8' });
    const big = await call('/api/publish', { channel: 'c', message: 'x'.repeat(70 * 1024) });
    expect(big).toMatchObject({ status: 413, body: { success: false } });
    expect((await fetch(`${fx.node.httpUrl}/api/health`)).status).toBe(200);
  });
});
