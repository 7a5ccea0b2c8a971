import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createEngine } from '../../cli/src/engine';
import type { Engine } from '@switchboard/core';
import { startRedis, startRedisCluster, waitFor } from '@switchboard/harness';
import type { RedisClusterHandle, RedisServer } from '@switchboard/harness';
import type { Express } from 'express';
import { createAccountApi } from '../src';
import { authA, authB, KEY_A, populate, populatedApp, silentLogger, testConfig } from './fixtures';
import { OpenApiChecker } from './openapi-document';

/** The same fixture data on the Redis engine must answer exactly as on the memory engine. */

const PATHS = [
  '/api/domains',
  '/api/connections',
  '/api/connections?page=1&limit=2',
  '/api/connections?page=2&limit=3',
  '/api/connections/sum',
  '/api/logs',
  '/api/members',
];

let redis: RedisServer;
let engine: Engine;
let app: Express;
let memoryApp: Express;

beforeAll(async () => {
  redis = await startRedis();
  const prefix = `acct-${randomBytes(4).toString('hex')}`;
  engine = await createEngine(testConfig({ REDIS_URL: redis.url, REDIS_PREFIX: prefix }), {
    logger: silentLogger(),
  });
  await populate(engine);
  app = createAccountApi({ engine, logger: silentLogger(), config: testConfig() });
  ({ app: memoryApp } = await populatedApp());
});

afterAll(async () => {
  await engine?.close();
  await redis?.stop();
});

describe('account API on the Redis engine', () => {
  test.each(PATHS)('GET %s answers as on the memory engine', async (path) => {
    for (const auth of [authA, authB]) {
      const onRedis = await request(app).get(path).set(auth).expect(200);
      const inMemory = await request(memoryApp).get(path).set(auth).expect(200);
      expect(onRedis.body).toEqual(inMemory.body);
    }
  });

  test('responses match docs/openapi.yaml', async () => {
    const checker = new OpenApiChecker();
    for (const path of PATHS) {
      const res = await request(app).get(path).set(authA);
      checker.check('get', path.split('?')[0] ?? path, { status: res.status, body: res.body as unknown });
    }
  });

  test('credentials and parameters are checked as on the memory engine', async () => {
    await request(app)
      .get('/api/logs')
      .set({ ...authA, secret: 'wrong' })
      .expect(401);
    await request(app).get('/api/logs').set({ key: 'unknown', secret: 'x' }).expect(401);
    await request(app).get('/api/connections?page=0').set(authA).expect(400);
  });

  test('Redis killed: 503 and health unavailable; back: served again without a restart', async () => {
    await redis.kill();
    await waitFor('the engine to notice Redis is gone', () => !engine.isAvailable(), 10_000);
    for (const path of PATHS) {
      const res = await request(app).get(path).set(authA);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        error: 'The engine is unreachable; the request was not carried out',
        code: 'SB_ENGINE_UNAVAILABLE',
      });
    }
    const health = await request(app).get('/api/health').expect(503);
    expect(health.body).toMatchObject({ status: 'unavailable' });

    await redis.restart();
    await waitFor('the engine to reconnect', () => engine.isAvailable(), 10_000);
    await request(app).get('/api/health').expect(200, { status: 'ok' });
    // The restarted server has no persistence: the key is gone until it is stored again.
    await request(app).get('/api/domains').set(authA).expect(401);
    await engine.keys.put(KEY_A);
    await request(app)
      .get('/api/domains')
      .set(authA)
      .expect(200, [...KEY_A.domains]);
  });
});

describe('account API on Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  let clusterEngine: Engine;
  let clusterApp: Express;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    const config = testConfig({
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      REDIS_PREFIX: `acct-${randomBytes(4).toString('hex')}`,
    });
    clusterEngine = await createEngine(config, { logger: silentLogger() });
    await populate(clusterEngine);
    clusterApp = createAccountApi({ engine: clusterEngine, logger: silentLogger(), config });
  }, 30_000);

  afterAll(async () => {
    await clusterEngine?.close();
    await cluster?.stop();
  });

  test.each(PATHS)('GET %s answers as on the memory engine', async (path) => {
    for (const auth of [authA, authB]) {
      const onCluster = await request(clusterApp).get(path).set(auth).expect(200);
      const inMemory = await request(memoryApp).get(path).set(auth).expect(200);
      expect(onCluster.body).toEqual(inMemory.body);
    }
  });
});
