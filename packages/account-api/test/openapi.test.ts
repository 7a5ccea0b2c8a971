import request from 'supertest';
import type { Response } from 'supertest';
import { EngineUnavailableError } from '@switchboard/core';
import type { Engine } from '@switchboard/core';
import type { Express } from 'express';
import { ACCOUNT_API_PATHS, ACCOUNT_API_POST_PATHS, createAccountApi } from '../src';
import { authA, authB, failingPort, populatedEngine, silentLogger, testConfig } from './fixtures';
import { HTTP_METHODS, OpenApiChecker } from './openapi-document';

const ACCOUNT_SERVER = 'Account API service';
const checker = new OpenApiChecker();

let app: Express;
let down: Express;
let unavailable: Express;

beforeAll(async () => {
  app = createAccountApi({ engine: await populatedEngine(), logger: silentLogger(), config: testConfig() });
  const engine = await populatedEngine();
  const fail = () => new EngineUnavailableError();
  const failing: Engine = {
    ...engine,
    keys: failingPort(engine.keys, fail),
    counts: failingPort(engine.counts, fail),
    logs: failingPort(engine.logs, fail),
    presence: failingPort(engine.presence, fail),
  };
  down = createAccountApi({ engine: failing, logger: silentLogger(), config: testConfig() });
  unavailable = createAccountApi({
    engine: { ...engine, isAvailable: () => false },
    logger: silentLogger(),
    config: testConfig(),
  });
});

const real = (res: Response) => ({ status: res.status, body: res.body as unknown, headers: res.headers });
const check = (path: string, res: Response) => checker.check('get', path.split('?')[0] ?? path, real(res));
const checkPost = (path: string, res: Response) => checker.check('post', path, real(res));

/** Every authenticated GET endpoint, with the query parameters it needs. */
const GET_ENDPOINTS = [
  '/api/domains',
  '/api/connections',
  '/api/connections/sum',
  '/api/logs',
  '/api/logs?channel=room-1&limit=1&messages=false',
  '/api/members',
  '/api/settings',
  '/api/history?channel=room-1',
  '/api/channel-members?channel=room-1',
];

/** A valid body for each POST endpoint. */
const POST_BODIES: Record<string, object> = {
  '/api/messages': { channel: 'room-1', message: { event: 'hi' } },
  '/api/kicks': { channel: 'room-1' },
};

describe('docs/openapi.yaml: account API', () => {
  test('is OpenAPI 3.1 and every response schema compiles', () => {
    expect(checker.doc['openapi']).toMatch(/^3\.1\.\d+$/);
    expect(checker.compileEverything()).toBeGreaterThan(40);
  });

  test('the checker rejects a response that drifted', () => {
    const probe = new OpenApiChecker();
    const drifted = { status: 200, body: [{ channel_id: 'a', room_id: 'a', count: 1 }] };
    expect(() => probe.check('get', '/api/connections', drifted)).toThrow(/does not match/);
    expect(() => probe.check('get', '/api/connections', { status: 418, body: {} })).toThrow(
      /documents no 418/,
    );
  });

  test('documents exactly the paths the account API serves', () => {
    const documented = Object.entries(checker.doc.paths)
      .filter(([, item]) =>
        HTTP_METHODS.some((m) =>
          ((item[m]?.['servers'] ?? []) as Array<{ description?: string }>).some(
            (s) => s.description === ACCOUNT_SERVER,
          ),
        ),
      )
      .map(([path]) => path)
      .sort();
    expect(documented).toEqual([...ACCOUNT_API_PATHS, ...ACCOUNT_API_POST_PATHS].sort());
  });

  test('200 responses of every endpoint match', async () => {
    for (const path of GET_ENDPOINTS) {
      for (const auth of [authA, authB]) check(path, await request(app).get(path).set(auth).expect(200));
    }
    for (const query of [
      '?channel=room-1&protocol=v3&page=2&limit=1',
      '?channel=room-1&protocol=v4&limit=500',
    ]) {
      check(
        `/api/channel-members${query}`,
        await request(app).get(`/api/channel-members${query}`).set(authA).expect(200),
      );
    }
    check(
      '/api/history',
      await request(app).get('/api/history?channel=x&protocol=v3&limit=5').set(authA).expect(200),
    );
    for (const [path, body] of Object.entries(POST_BODIES)) {
      checkPost(path, await request(app).post(path).set(authA).send(body).expect(200));
    }
    checkPost(
      '/api/kicks',
      await request(app)
        .post('/api/kicks')
        .set(authA)
        .send({ uuid: 'u-1', user: 'alice', reason: 'bye' })
        .expect(200),
    );
    for (const query of ['?page=1&limit=2', '?page=2', '?limit=500', '?page=99']) {
      for (const path of ['/api/connections', '/api/members']) {
        check(`${path}${query}`, await request(app).get(`${path}${query}`).set(authA).expect(200));
      }
    }
    check('/api/health', await request(app).get('/api/health').expect(200));
    check('/api/live', await request(app).get('/api/live').expect(200));
    check('/api/live', await request(unavailable).get('/api/live').expect(200));
  });

  test('error responses of every endpoint match', async () => {
    for (const path of GET_ENDPOINTS) {
      check(
        path,
        await request(app)
          .get(`${path}${path.includes('?') ? '&' : '?'}unknown=1`)
          .set(authA)
          .expect(400),
      );
      check(path, await request(app).get(path).expect(401));
      check(
        path,
        await request(app)
          .get(path)
          .set({ ...authA, secret: 'wrong' })
          .expect(401),
      );
      check(path, await request(down).get(path).set(authA).expect(503));
      check(path, await request(unavailable).get(path).set(authA).expect(503));
    }
    check(
      '/api/connections',
      await request(app).get('/api/connections?page=0&limit=x').set(authA).expect(400),
    );
    check('/api/health', await request(unavailable).get('/api/health').expect(503));
    for (const [path, body] of Object.entries(POST_BODIES)) {
      checkPost(
        path,
        await request(app)
          .post(path)
          .set(authA)
          .send({ ...body, extra: 1 })
          .expect(400),
      );
      checkPost(
        path,
        await request(app)
          .post(path)
          .set(authA)
          .set('content-type', 'application/json')
          .send('{')
          .expect(400),
      );
      checkPost(path, await request(app).post(path).send(body).expect(401));
      checkPost(path, await request(down).post(path).set(authA).send(body).expect(503));
      checkPost(path, await request(unavailable).post(path).set(authA).send(body).expect(503));
      checkPost(
        path,
        await request(app)
          .post(path)
          .set(authA)
          .send({ ...body, message: 'x'.repeat(70 * 1024) })
          .expect(413),
      );
    }
    checkPost(
      '/api/messages',
      await request(app).post('/api/messages').set(authA).send({ channel: 'room-1' }).expect(400),
    );
    checkPost(
      '/api/kicks',
      await request(app).post('/api/kicks').set(authA).send({ reason: 'all?' }).expect(400),
    );
  });

  test('429 after too many failed authentications matches on every endpoint', async () => {
    const limited = createAccountApi({
      engine: await populatedEngine(),
      logger: silentLogger(),
      config: testConfig({ AUTH_FAILURES_PER_ADDRESS: '1' }),
    });
    await request(limited)
      .get('/api/domains')
      .set({ ...authA, secret: 'wrong' })
      .expect(401);
    for (const path of GET_ENDPOINTS) {
      check(path, await request(limited).get(path).set(authA).expect(429));
    }
    for (const [path, body] of Object.entries(POST_BODIES)) {
      checkPost(path, await request(limited).post(path).set(authA).send(body).expect(429));
    }
  });

  test('404 and 405 match their documented responses', async () => {
    checker.checkComponent(
      'AccountNotFound',
      real(await request(app).get('/api/nothing').set(authA).expect(404)),
    );
    checker.checkComponent('AccountNotFound', real(await request(app).post('/').expect(404)));
    for (const path of ACCOUNT_API_PATHS) {
      checker.checkComponent(
        'AccountMethodNotAllowed',
        real(await request(app).post(path).set(authA).expect(405)),
      );
    }
    for (const path of ACCOUNT_API_POST_PATHS) {
      checker.checkComponent(
        'AccountPostMethodNotAllowed',
        real(await request(app).get(path).set(authA).expect(405)),
      );
    }
  });

  test('every documented status of the account API was exercised', () => {
    expect(checker.documented(ACCOUNT_SERVER).filter((entry) => !checker.seen.has(entry))).toEqual([]);
  });
});
