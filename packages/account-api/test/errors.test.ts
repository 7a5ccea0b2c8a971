import request from 'supertest';
import type { Response } from 'supertest';
import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  EngineUnavailableError,
} from '@switchboard/core';
import type { Engine } from '@switchboard/core';
import { createAccountApi, errorHandler } from '../src';
import {
  authA,
  failingPort,
  KEY_A,
  populatedApp,
  populatedEngine,
  silentLogger,
  testConfig,
} from './fixtures';
import express from 'express';
import type { Express } from 'express';

const ENDPOINTS = ['/api/domains', '/api/connections', '/api/connections/sum', '/api/logs', '/api/members'];

/** Every error is JSON `{error, code}` with a readable text, never a stack or a page. */
function expectErrorBody(res: Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['code', 'error']);
  expect(res.body.code).toBe(code);
  expect(typeof res.body.error).toBe('string');
  expect(res.text).not.toMatch(/\bat .+\.(ts|js):\d+/);
  expect(res.text).not.toMatch(/<html|<pre/i);
}

let app: Express;

beforeEach(async () => {
  ({ app } = await populatedApp());
});

describe('401: credentials', () => {
  test.each(ENDPOINTS)('%s without headers', async (path) => {
    const res = await request(app).get(path);
    expectErrorBody(res, 401, 'SB_UNAUTHORIZED');
    expect(res.body.error).toMatch(/Missing key and secret headers/);
  });

  test('a missing secret is named', async () => {
    const res = await request(app).get('/api/domains').set({ key: KEY_A.key });
    expectErrorBody(res, 401, 'SB_UNAUTHORIZED');
    expect(res.body.error).toMatch(/Missing secret header/);
  });

  test('a missing key is named', async () => {
    const res = await request(app).get('/api/domains').set({ secret: KEY_A.secret });
    expect(res.body.error).toMatch(/Missing key header/);
  });

  test('an empty header counts as missing', async () => {
    const res = await request(app).get('/api/domains').set({ key: KEY_A.key, secret: '' });
    expect(res.body.error).toMatch(/Missing secret header/);
  });

  test.each([
    ['a wrong secret', { key: KEY_A.key, secret: 'wrong-secret' }],
    ['the secret with a suffix', { key: KEY_A.key, secret: `${KEY_A.secret}x` }],
    ['a prefix of the secret', { key: KEY_A.key, secret: KEY_A.secret.slice(0, -1) }],
    ['an unknown key', { key: 'nobody', secret: KEY_A.secret }],
    ['a key that is not a key', { key: 'no such/key!', secret: KEY_A.secret }],
  ])('%s: one message, not saying which part was wrong', async (_name, headers) => {
    const res = await request(app).get('/api/logs').set(headers);
    expectErrorBody(res, 401, 'SB_UNAUTHORIZED');
    expect(res.body.error).toBe('Unknown API key or wrong secret');
  });

  test('credentials are checked before parameters', async () => {
    const res = await request(app).get('/api/connections?page=0');
    expect(res.status).toBe(401);
  });

  test('a key deleted from the store stops working at once', async () => {
    const { engine, app: api } = await populatedApp();
    await request(api).get('/api/domains').set(authA).expect(200);
    await engine.keys.delete(KEY_A.key);
    expect((await request(api).get('/api/domains').set(authA)).status).toBe(401);
  });
});

describe('400: query parameters', () => {
  test.each(
    ENDPOINTS.filter(
      (p) => !['/api/connections', '/api/connections/sum', '/api/members', '/api/logs'].includes(p),
    ),
  )('%s takes no parameters', async (path) => {
    const res = await request(app).get(`${path}?foo=1`).set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
    expect(res.body.error).toBe('Unknown query parameter "foo" (this endpoint takes no query parameters)');
  });

  test('/api/domains rejects even a bare parameter', async () => {
    const res = await request(app).get('/api/domains?x').set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
    expect(res.body.error).toContain('"x"');
  });

  test('/api/connections names unknown parameters and what it accepts', async () => {
    const res = await request(app).get('/api/connections?pages=2&size=3').set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
    expect(res.body.error).toBe('Unknown query parameters "pages", "size" (accepted: page, limit, family)');
  });

  test('/api/connections/sum takes only family, piesocket or pusher', async () => {
    const res = await request(app).get('/api/connections/sum?foo=1').set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
    expect(res.body.error).toBe('Unknown query parameter "foo" (accepted: family)');
    const wrong = await request(app).get('/api/connections/sum?family=v3').set(authA);
    expectErrorBody(wrong, 400, 'SB_INVALID_FIELD');
    expect(wrong.body.error).toMatch(/family/);
  });

  test.each([
    ['page=0', /^page must be at least 1/],
    ['page=-1', /^page must be a positive integer, got "-1"/],
    ['page=abc', /^page must be a positive integer, got "abc"/],
    ['page=1.5', /^page must be a positive integer/],
    ['page=1e3', /^page must be a positive integer/],
    ['page=', /^page must be a positive integer, got ""/],
    ['page=%201', /^page must be a positive integer/],
    ['page=1&page=2', /^page must be given once/],
    ['page=99999999999999999999', /^page must be at most 9007199254740991/],
    ['limit=0', /^limit must be at least 1/],
    ['limit=-5', /^limit must be a positive integer/],
    ['limit=ten', /^limit must be a positive integer/],
    ['page=1&limit=0x10', /^limit must be a positive integer/],
  ])('/api/connections?%s', async (query, message) => {
    const res = await request(app).get(`/api/connections?${query}`).set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
    expect(res.body.error).toMatch(message);
  });

  test.each(['page=0', 'limit=x', 'channel=a'])('/api/members?%s', async (query) => {
    const res = await request(app).get(`/api/members?${query}`).set(authA);
    expectErrorBody(res, 400, 'SB_INVALID_FIELD');
  });

  test('every problem is reported at once', async () => {
    const res = await request(app).get('/api/connections?page=0&limit=x&sort=desc').set(authA);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/page must be at least 1/);
    expect(res.body.error).toMatch(/limit must be a positive integer/);
    expect(res.body.error).toMatch(/"sort"/);
  });

  test('a long value is cut in the message', async () => {
    const res = await request(app)
      .get(`/api/connections?page=${'x'.repeat(5000)}`)
      .set(authA);
    expect(res.status).toBe(400);
    expect(res.body.error.length).toBeLessThan(120);
  });
});

describe('404: unknown paths', () => {
  test.each([
    '/console',
    '/console/',
    '/console/nope.js',
    '/api',
    '/api/',
    '/api/nope',
    '/api/connections/total',
    '/API/domains',
    '/domains',
    '/api/v4/members',
  ])('GET %s', async (path) => {
    const res = await request(app).get(path).set(authA);
    expectErrorBody(res, 404, 'SB_NOT_FOUND');
  });

  test('the message names the method and the path', async () => {
    const res = await request(app).post('/api/publish');
    expectErrorBody(res, 404, 'SB_NOT_FOUND');
    expect(res.body.error).toBe('Not found: POST /api/publish');
  });

  test('a malformed percent-encoding in the path is still a JSON 404', async () => {
    const res = await request(app).get('/api/%E0%A4%A').set(authA);
    expectErrorBody(res, 404, 'SB_NOT_FOUND');
  });
});

describe('405: wrong method', () => {
  test.each(
    [...ENDPOINTS, '/api/health'].flatMap((path) =>
      ['post', 'put', 'patch', 'delete', 'options'].map((m) => [m, path]),
    ),
  )('%s %s', async (method, path) => {
    const res = await request(app)[method as 'post'](path).set(authA);
    expect(res.headers['allow']).toBe('GET, HEAD');
    expectErrorBody(res, 405, 'SB_METHOD_NOT_ALLOWED');
  });

  test('the method is refused before credentials are looked at', async () => {
    const res = await request(app).delete('/api/logs');
    expect(res.status).toBe(405);
    expect(res.body.error).toBe('Method DELETE not allowed on /api/logs; use GET or HEAD');
  });
});

describe('503: the engine is unreachable', () => {
  const unavailable = () => new EngineUnavailableError(new Error('connect ECONNREFUSED'));

  async function appWith(override: (engine: Engine) => Partial<Engine>): Promise<Express> {
    const engine = await populatedEngine();
    return createAccountApi({
      engine: { ...engine, ...override(engine) },
      logger: silentLogger(),
      config: testConfig(),
    });
  }

  test.each(ENDPOINTS)('%s when every store rejects', async (path) => {
    const api = await appWith((e) => ({
      keys: failingPort(e.keys, unavailable),
      counts: failingPort(e.counts, unavailable),
      logs: failingPort(e.logs, unavailable),
      presence: failingPort(e.presence, unavailable),
    }));
    const res = await request(api).get(path).set(authA);
    expectErrorBody(res, 503, 'SB_ENGINE_UNAVAILABLE');
    expect(res.body.error).toBe('The engine is unreachable; the request was not carried out');
  });

  test.each(ENDPOINTS.filter((p) => p !== '/api/domains'))(
    '%s when its own store rejects after auth',
    async (path) => {
      const api = await appWith((e) => ({
        counts: failingPort(e.counts, unavailable),
        logs: failingPort(e.logs, unavailable),
        presence: failingPort(e.presence, unavailable),
      }));
      expectErrorBody(await request(api).get(path).set(authA), 503, 'SB_ENGINE_UNAVAILABLE');
    },
  );

  test('while the engine reports itself unavailable, without calling the store', async () => {
    const engine = await populatedEngine();
    const get = jest.spyOn(engine.keys, 'get');
    const api = createAccountApi({
      engine: { ...engine, isAvailable: () => false },
      logger: silentLogger(),
      config: testConfig(),
    });
    expectErrorBody(await request(api).get('/api/logs').set(authA), 503, 'SB_ENGINE_UNAVAILABLE');
    expect(get).not.toHaveBeenCalled();
    const health = await request(api).get('/api/health').expect(503);
    expect(health.body).toEqual({ status: 'unavailable', reason: 'the memory engine is unreachable' });
  });
});

describe('500: a bug stays inside', () => {
  test('an unexpected error answers a generic JSON 500 and is logged', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const engine = createMemoryEngine(createMemoryState());
    await engine.keys.put(KEY_A);
    const api = createAccountApi({
      engine: { ...engine, counts: failingPort(engine.counts, () => new TypeError('boom at secret place')) },
      logger,
      config: testConfig(),
    });
    const res = await request(api).get('/api/connections/sum').set(authA);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Internal server error', code: 'SB_INTERNAL' });
    expect(res.text).not.toContain('boom');
    expect(lines.join('')).toContain('boom at secret place');
    expect(lines.join('')).not.toContain(KEY_A.secret);
  });
});

describe('errorHandler with errors from Express itself', () => {
  test.each([
    [400, 'SB_INVALID_FIELD', 'Bad request'],
    [404, 'SB_NOT_FOUND', 'Not found'],
    [413, 'SB_PAYLOAD_TOO_LARGE', 'Payload too large'],
  ])('a %i http-error keeps its status, with the catalog text', async (status, code, text) => {
    const api = express();
    api.get('/x', () => {
      throw Object.assign(new Error('internal detail'), { status, expose: true });
    });
    api.use(errorHandler(silentLogger()));
    const res = await request(api).get('/x');
    expectErrorBody(res, status, code);
    expect(res.body.error).toBe(text);
  });
});
