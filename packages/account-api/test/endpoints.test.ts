import request from 'supertest';
import { createAccountApi } from '../src';
import { authA, authB, KEY_A, populatedApp, silentLogger, testConfig } from './fixtures';
import { createMemoryEngine, createMemoryState } from '@switchboard/core';
import type { Engine, LogRecord } from '@switchboard/core';
import type { Express } from 'express';

let app: Express;
let engine: Engine;

beforeEach(async () => {
  ({ app, engine } = await populatedApp());
});

describe('GET /api/domains', () => {
  test("answers the key's allowed domains", async () => {
    const res = await request(app).get('/api/domains').set(authA).expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual(['example.com', 'app.example.org']);
  });

  test('answers [] for a key that allows any origin', async () => {
    await request(app).get('/api/domains').set(authB).expect(200, []);
  });
});

describe('GET /api/connections', () => {
  test('lists every channel by count descending, then channel ascending, counting every node', async () => {
    const res = await request(app).get('/api/connections').set(authA).expect(200);
    expect(res.body).toEqual([
      { channel_id: 'lobby', room_id: 'lobby', connection_count: 3 },
      { channel_id: 'room-1', room_id: 'room-1', connection_count: 3 },
      { channel_id: 'alpha', room_id: 'alpha', connection_count: 1 },
      { channel_id: 'zeta', room_id: 'zeta', connection_count: 1 },
    ]);
  });

  test('drops a channel whose connections all left', async () => {
    await engine.counts.decrement('node-1', KEY_A.key, 'zeta');
    const res = await request(app).get('/api/connections').set(authA).expect(200);
    expect(res.body.map((r: { channel_id: string }) => r.channel_id)).toEqual(['lobby', 'room-1', 'alpha']);
  });

  test('paginates with page and limit', async () => {
    const first = await request(app).get('/api/connections?page=1&limit=2').set(authA).expect(200);
    expect(first.body).toEqual({
      data: [
        { channel_id: 'lobby', room_id: 'lobby', connection_count: 3 },
        { channel_id: 'room-1', room_id: 'room-1', connection_count: 3 },
      ],
      total: 4,
      page: 1,
      limit: 2,
      totalPages: 2,
    });
    const second = await request(app).get('/api/connections?page=2&limit=2').set(authA).expect(200);
    expect(second.body.data.map((r: { channel_id: string }) => r.channel_id)).toEqual(['alpha', 'zeta']);
    const last = await request(app).get('/api/connections?page=2&limit=3').set(authA).expect(200);
    expect(last.body).toMatchObject({ total: 4, page: 2, limit: 3, totalPages: 2 });
    expect(last.body.data).toHaveLength(1);
  });

  test('answers an empty page past the end', async () => {
    const res = await request(app).get('/api/connections?page=9&limit=2').set(authA).expect(200);
    expect(res.body).toEqual({ data: [], total: 4, page: 9, limit: 2, totalPages: 2 });
  });

  test('paginates when only page or only limit is given (limit default 100, page default 1)', async () => {
    const byPage = await request(app).get('/api/connections?page=1').set(authA).expect(200);
    expect(byPage.body).toMatchObject({ total: 4, page: 1, limit: 100, totalPages: 1 });
    const byLimit = await request(app).get('/api/connections?limit=3').set(authA).expect(200);
    expect(byLimit.body).toMatchObject({ total: 4, page: 1, limit: 3, totalPages: 2 });
  });

  test('caps limit to 100', async () => {
    const res = await request(app).get('/api/connections?page=1&limit=5000').set(authA).expect(200);
    expect(res.body).toMatchObject({ limit: 100, totalPages: 1 });
  });

  test('pages through 250 channels in 100s', async () => {
    for (let i = 0; i < 250; i += 1)
      await engine.counts.increment('node-1', 'key-b', `c-${String(i).padStart(3, '0')}`);
    const pages = [];
    for (const page of [1, 2, 3]) {
      pages.push(
        (await request(app).get(`/api/connections?page=${page}&limit=100`).set(authB).expect(200)).body,
      );
    }
    expect(pages.map((p) => p.data.length)).toEqual([100, 100, 50]);
    expect(pages[0]).toMatchObject({ total: 250, totalPages: 3 });
    const channels = pages.flatMap((p) => p.data.map((r: { channel_id: string }) => r.channel_id));
    expect(channels).toEqual([...channels].sort());
    expect(new Set(channels).size).toBe(250);
  });

  test('answers an empty list, and a page with totalPages 0, for a key without connections', async () => {
    await request(app).get('/api/connections').set(authB).expect(200, []);
    await request(app)
      .get('/api/connections?page=1')
      .set(authB)
      .expect(200, { data: [], total: 0, page: 1, limit: 100, totalPages: 0 });
  });
});

describe('GET /api/connections/sum', () => {
  test('sums every channel', async () => {
    await request(app).get('/api/connections/sum').set(authA).expect(200, { connection_count: 8 });
  });

  test('is 0 for a key without connections', async () => {
    await request(app).get('/api/connections/sum').set(authB).expect(200, { connection_count: 0 });
  });
});

describe('GET /api/logs', () => {
  test('lists the records newest first with the documented fields only', async () => {
    const res = await request(app).get('/api/logs').set(authA).expect(200);
    expect(res.body).toEqual([
      {
        id: 'log-3',
        channel: 'lobby',
        protocol: 'v3',
        source: 'api',
        message: 'AAEC',
        binary: true,
        uuid: 'u1',
        user: 'alice',
        timestamp: '2026-01-01T00:00:03.000Z',
      },
      {
        id: 'log-2',
        channel: 'room-1',
        protocol: 'v4',
        source: 'client',
        message: 'message 2',
        uuid: 'u3',
        user: { id: 7 },
        timestamp: '2026-01-01T00:00:02.000Z',
      },
      {
        id: 'log-1',
        channel: 'room-1',
        protocol: 'v3',
        source: 'api',
        message: 'message 1',
        timestamp: '2026-01-01T00:00:01.000Z',
      },
    ]);
  });

  test('keeps the 500 most recent', async () => {
    const fresh = createMemoryEngine(createMemoryState());
    await fresh.keys.put(KEY_A);
    for (let n = 0; n < 1200; n += 1) {
      const record: LogRecord = {
        id: `m${n}`,
        channel: 'busy',
        protocol: 'v4',
        source: 'api',
        message: String(n),
        timestamp: new Date(n * 1000).toISOString(),
      };
      await fresh.logs.append(KEY_A.key, record);
    }
    const api = createAccountApi({ engine: fresh, logger: silentLogger(), config: testConfig() });
    const res = await request(api).get('/api/logs').set(authA).expect(200);
    expect(res.body).toHaveLength(500);
    expect(res.body[0].id).toBe('m1199');
    expect(res.body[499].id).toBe('m700');
  });
});

describe('GET /api/logs parameters (what a poller shows, not the whole log)', () => {
  test('channel keeps that channel, limit the newest, after only newer entries, messages=false the texts out', async () => {
    const ids = async (query: string): Promise<string[]> =>
      (
        (await request(app).get(`/api/logs?${query}`).set(authA).expect(200)).body as Array<{ id: string }>
      ).map((entry) => entry.id);
    expect(await ids('channel=room-1')).toEqual(['log-2', 'log-1']);
    expect(await ids('limit=1')).toEqual(['log-3']);
    expect(await ids('channel=room-1&limit=1')).toEqual(['log-2']);
    expect(await ids('after=log-1')).toEqual(['log-3', 'log-2']);
    expect(await ids('after=log-3')).toEqual([]);
    expect(await ids('after=gone-from-the-log')).toEqual(['log-3', 'log-2', 'log-1']);
    expect(await ids('limit=100000')).toHaveLength(3);
    const light = await request(app).get('/api/logs?limit=1&messages=false').set(authA).expect(200);
    expect(light.body).toEqual([
      {
        id: 'log-3',
        channel: 'lobby',
        protocol: 'v3',
        source: 'api',
        binary: true,
        uuid: 'u1',
        user: 'alice',
        timestamp: '2026-01-01T00:00:03.000Z',
      },
    ]);
  });

  test.each([
    ['limit=0', 'limit must be at least 1'],
    ['channel=bad%20name', 'Invalid query parameter "channel"'],
    ['channel=a&channel=b', 'channel must be given once'],
    ['messages=no', 'messages must be "true" or "false"'],
    ['since=1', 'Unknown query parameter "since"'],
  ])('%s is a 400 naming the problem', async (query, text) => {
    const res = await request(app).get(`/api/logs?${query}`).set(authA).expect(400);
    expect(res.body.error).toContain(text);
  });
});

describe('GET /api/members', () => {
  test('groups presence members of both protocols by channel', async () => {
    const res = await request(app).get('/api/members').set(authA).expect(200);
    expect(res.body).toEqual({
      lobby: [{ uuid: 'u4', user: 42, protocol: 'v4' }],
      'room-1': [
        { uuid: 'u2', protocol: 'v3' },
        { uuid: 'u1', user: 'alice', protocol: 'v3' },
        { uuid: 'u3', user: { id: 7, name: 'Bo' }, protocol: 'v4' },
      ],
    });
    expect(Object.keys(res.body)).toEqual(['lobby', 'room-1']);
  });

  test('lists a channel named __proto__ like any other', async () => {
    const topic = { key: KEY_A.key, protocol: 'v3' as const, channel: '__proto__' };
    await engine.presence.join(topic, { connId: 'n/9', nodeId: 'n', member: { uuid: 'u9' } }, 9);
    const res = await request(app).get('/api/members').set(authA).expect(200);
    expect(JSON.parse(res.text)['__proto__']).toEqual([{ uuid: 'u9', protocol: 'v3' }]);
    const paged = await request(app).get('/api/members?limit=1').set(authA).expect(200);
    expect(JSON.parse(paged.text)['data']['__proto__']).toEqual([{ uuid: 'u9', protocol: 'v3' }]);
  });

  test('pages channels by name, each with at most ROSTER_LIMIT members per protocol', async () => {
    const { engine: big, app: api } = await populatedApp({ ROSTER_LIMIT: '2' });
    for (let i = 0; i < 5; i++) {
      const topic = { key: KEY_A.key, protocol: 'v3' as const, channel: 'crowd' };
      await big.presence.join(topic, { connId: `n/c${i}`, nodeId: 'n', member: { uuid: `c${i}` } }, 100 + i);
    }
    const first = await request(api).get('/api/members').set(authA).expect(200);
    expect(first.body['crowd']).toEqual([
      { uuid: 'c4', protocol: 'v3' },
      { uuid: 'c3', protocol: 'v3' },
    ]);
    const page = await request(api).get('/api/members?page=2&limit=2').set(authA).expect(200);
    expect(page.body).toEqual({
      data: { 'room-1': expect.any(Array) },
      total: 3,
      page: 2,
      limit: 2,
      totalPages: 2,
    });
    const first2 = await request(api).get('/api/members?limit=2').set(authA).expect(200);
    expect(Object.keys(first2.body['data'])).toEqual(['crowd', 'lobby']);
    expect(
      (await request(api).get('/api/members?page=3&limit=2').set(authA).expect(200)).body['data'],
    ).toEqual({});
  });

  test('drops a member that left', async () => {
    await engine.presence.leave({ key: KEY_A.key, protocol: 'v4', channel: 'lobby' }, 'node-2/2');
    const res = await request(app).get('/api/members').set(authA).expect(200);
    expect(Object.keys(res.body)).toEqual(['room-1']);
  });
});

describe('GET /api/health', () => {
  test('answers ok without credentials', async () => {
    await request(app).get('/api/health').expect(200, { status: 'ok' });
  });

  test('ignores query parameters', async () => {
    await request(app).get('/api/health?probe=1').expect(200, { status: 'ok' });
  });
});

describe('GET /api/live', () => {
  test('answers alive without credentials, even while the engine is unreachable', async () => {
    await request(app).get('/api/live').expect(200, { status: 'alive' });
    const down = createAccountApi({
      engine: { ...engine, isAvailable: () => false },
      logger: silentLogger(),
      config: testConfig(),
    });
    await request(down).get('/api/live').expect(200, { status: 'alive' });
  });
});

describe('HTTP details', () => {
  test('HEAD answers like GET without a body', async () => {
    const res = await request(app).head('/api/connections/sum').set(authA).expect(200);
    expect(res.text).toBeUndefined();
  });

  test('a trailing slash names the same endpoint', async () => {
    await request(app).get('/api/connections/sum/').set(authA).expect(200, { connection_count: 8 });
  });

  test('responses are not cacheable and do not advertise the framework', async () => {
    const res = await request(app).get('/api/domains').set(authA).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});
