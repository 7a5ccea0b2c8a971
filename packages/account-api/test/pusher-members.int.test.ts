import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createMemoryEngine, createMemoryState } from '@switchboard/core';
import type { Engine, Member, Topic } from '@switchboard/core';
import { startRedis, startRedisCluster } from '@switchboard/harness';
import type { Express } from 'express';
import { createEngine } from '../../cli/src/engine';
import { createAccountApi } from '../src';
import { authA, KEY_A, silentLogger, testConfig } from './fixtures';
import { OpenApiChecker } from './openapi-document';

/**
 * A Pusher presence channel's members are its users (docs/pusher.md, "Decisions"): the account
 * API lists each user once, by its most recently active socket, on every engine. The entries are
 * written through the presence port as two gateways write them (their own node ids); the same
 * lists with real gateways and `pusher-js` are test/e2e/pusher-families.test.ts's.
 */

const CHANNEL = 'presence-room';
const pusher: Topic = { key: KEY_A.key, protocol: 'pusher', channel: CHANNEL };
const v4: Topic = { ...pusher, protocol: 'v4' };
/** What the Pusher dialect stores: uuid the socket id, user the `user_id`, info the `user_info`. */
const socket = (id: string, user: string): Member => ({ uuid: id, user, info: { name: user, socket: id } });
const adaTab1 = socket('111.1', 'ada');
const adaTab2 = socket('222.1', 'ada');
const bob = socket('111.2', 'bob');
const listed = (member: Member) => ({ ...member, protocol: 'pusher' });

function describeOn(name: string, open: () => Promise<{ engine: Engine; close: () => Promise<void> }>): void {
  describe(`Pusher members per user: ${name}`, () => {
    let engine: Engine;
    let close: () => Promise<void> = async () => undefined;
    let app: Express;
    const checker = new OpenApiChecker();
    const get = async (path: string): Promise<unknown> => {
      const res = await request(app).get(path).set(authA).expect(200);
      checker.check('get', path.split('?')[0] ?? path, { status: res.status, body: res.body as unknown });
      return res.body as unknown;
    };
    const page = (n: number, limit: number) =>
      get(`/api/channel-members?channel=${CHANNEL}&protocol=pusher&page=${n}&limit=${limit}`);

    beforeAll(async () => {
      ({ engine, close } = await open());
      await engine.keys.put(KEY_A);
      app = createAccountApi({ engine, logger: silentLogger(), config: testConfig() });
      // Ada's first tab on gateway a, Bob on gateway a, Ada's second tab on gateway b; a V4 user
      // with two connections in the channel of the same name, listed per connection as before.
      const join = (topic: Topic, connId: string, member: Member, now: number) =>
        engine.presence.join(topic, { connId, nodeId: connId.split('/')[0]!, member }, now);
      await join(pusher, 'gateway-a/1', adaTab1, 1000);
      await join(pusher, 'gateway-a/2', bob, 1001);
      await join(pusher, 'gateway-b/1', adaTab2, 1002);
      await join(v4, 'gateway-a/3', { uuid: 'v4-1', user: 'carol' }, 1003);
      await join(v4, 'gateway-b/2', { uuid: 'v4-2', user: 'carol' }, 1004);
    }, 30_000);

    afterAll(async () => {
      await close();
    });

    it('lists a user with two tabs on two gateways once, by its most recent socket', async () => {
      expect(await get('/api/members')).toEqual({
        [CHANNEL]: [
          { uuid: 'v4-2', user: 'carol', protocol: 'v4' },
          { uuid: 'v4-1', user: 'carol', protocol: 'v4' },
          listed(adaTab2),
          listed(bob),
        ],
      });
      expect(await get('/api/members?page=1&limit=1')).toEqual({
        data: { [CHANNEL]: [expect.anything(), expect.anything(), listed(adaTab2), listed(bob)] },
        total: 1,
        page: 1,
        limit: 1,
        totalPages: 1,
      });
      expect(await page(1, 100)).toEqual({
        data: [listed(adaTab2), listed(bob)],
        total: 2,
        page: 1,
        limit: 100,
        totalPages: 1,
      });
      // V4 as before: each identity once in its own listing.
      expect(await get(`/api/channel-members?channel=${CHANNEL}&protocol=v4`)).toMatchObject({
        data: [{ uuid: 'v4-2', user: 'carol', protocol: 'v4' }],
        total: 1,
      });
    });

    it('pages users one at a time, never repeating or skipping one', async () => {
      const pages = [await page(1, 1), await page(2, 1), await page(3, 1)];
      expect(pages).toEqual([
        { data: [listed(adaTab2)], total: 2, page: 1, limit: 1, totalPages: 2 },
        { data: [listed(bob)], total: 2, page: 2, limit: 1, totalPages: 2 },
        { data: [], total: 2, page: 3, limit: 1, totalPages: 2 },
      ]);
    });

    it('shows a user by its other tab when the latest closes, and drops it after its last', async () => {
      await engine.presence.leave(pusher, 'gateway-b/1');
      expect(await page(1, 100)).toMatchObject({ data: [listed(bob), listed(adaTab1)], total: 2 });
      await engine.presence.leave(pusher, 'gateway-a/1');
      expect(await page(1, 100)).toEqual({
        data: [listed(bob)],
        total: 1,
        page: 1,
        limit: 100,
        totalPages: 1,
      });
      expect(((await get('/api/members')) as Record<string, unknown[]>)[CHANNEL]).toEqual([
        { uuid: 'v4-2', user: 'carol', protocol: 'v4' },
        { uuid: 'v4-1', user: 'carol', protocol: 'v4' },
        listed(bob),
      ]);
    });
  });
}

describeOn('memory engine', async () => ({
  engine: createMemoryEngine(createMemoryState()),
  close: async () => undefined,
}));

describeOn('Redis standalone', async () => {
  const redis = await startRedis();
  const config = testConfig({ REDIS_URL: redis.url, REDIS_PREFIX: `acct-${randomBytes(4).toString('hex')}` });
  const engine = await createEngine(config, { logger: silentLogger() });
  return {
    engine,
    close: async () => {
      await engine.close();
      await redis.stop();
    },
  };
});

describeOn('Redis Cluster', async () => {
  const cluster = await startRedisCluster();
  const config = testConfig({
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    REDIS_PREFIX: `acct-${randomBytes(4).toString('hex')}`,
  });
  const engine = await createEngine(config, { logger: silentLogger() });
  return {
    engine,
    close: async () => {
      await engine.close();
      await cluster.stop();
    },
  };
});
