import { randomBytes } from 'node:crypto';
import request from 'supertest';
import type Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '@switchboard/cli';
import type { ApiKeyRecord, Engine } from '@switchboard/core';
import { createAccountApi } from '@switchboard/account-api';
import { startRedis } from '@switchboard/harness';
import {
  connectClient,
  createTestKey,
  localPusherJs,
  pusherBackend,
  pusherJsConnected,
  pusherJsSubscribed as subscribed,
  startGateway,
} from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';
import type { Express } from 'express';
import { until } from './support/until';

/**
 * PieSocket (V3, V4) and Pusher connections on one cluster (two gateways, one real Redis, the
 * account API as its own service): on the same key and channel names, each family's counts and
 * members are its own, marked where they are Pusher's, and the account API's publish to a
 * Pusher channel reaches `pusher-js` as a Pusher event (docs/pusher.md).
 */

let redis: RedisServer;
let one: TestGateway;
let two: TestGateway;
let accountEngine: Engine;
let account: Express;
let app: ApiKeyRecord;
const raws: TestClient[] = [];
const jsClients: PusherJs[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `e2e-${randomBytes(4).toString('hex')}` };
  one = await startGateway({ env });
  two = await startGateway({ env });
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent', ACCOUNT_PORT: '0' });
  accountEngine = await createEngine(config, { logger: createLogger({ level: 'silent' }) });
  account = createAccountApi({ engine: accountEngine, logger: createLogger({ level: 'silent' }), config });
  app = await createTestKey(accountEngine);
}, 30_000);

afterAll(async () => {
  for (const client of jsClients) client.disconnect();
  for (const raw of raws) raw.close();
  await one?.close();
  await two?.close();
  await accountEngine?.close();
  await redis?.stop();
});

const backend = (gateway: TestGateway): Pusher => pusherBackend(app, gateway.port);

/** pusher-js on `gateway`, presence channels authorized for `user` by the SDK, connected. */
async function pusherJs(gateway: TestGateway, user: string): Promise<PusherJs> {
  const client = localPusherJs({
    key: app.key,
    port: gateway.port,
    signer: backend(gateway),
    presence: { user_id: user, user_info: { name: user } },
  });
  jsClients.push(client);
  await pusherJsConnected(client);
  return client;
}

async function raw(
  gateway: TestGateway,
  path: string,
  query: Record<string, string> = {},
): Promise<TestClient> {
  const client = await connectClient(gateway.wsUrl(path, { api_key: app.key, ...query }));
  raws.push(client);
  return client;
}

const get = (path: string) => request(account).get(path).set({ key: app.key, secret: app.secret });
const post = (path: string, body: object) =>
  request(account).post(path).set({ key: app.key, secret: app.secret }).send(body);

describe('V3/V4 and Pusher on one cluster', () => {
  it('counts and lists each family’s connections and members apart, Pusher’s marked', async () => {
    // PieSocket: two V3 sockets and one V4 socket in `shared`; Pusher: three sockets in `shared`
    // and one in `pusher-only`, over both gateways.
    await raw(one, '/v3/shared');
    await raw(two, '/v3/shared');
    const v4 = await raw(two, '/v4/shared', { presence: '1', user: 'ada', uuid: 'u-ada-v4' });
    await v4.nextEvent('system::member_list');
    // A V4 member of a channel named like the Pusher presence channel: a member of V4's only.
    const carol = await raw(one, '/v4/presence-shared', { presence: '1', user: 'carol', uuid: 'u-carol' });
    await carol.nextEvent('system::member_list');
    const [p1, p2, p3] = await Promise.all([
      pusherJs(one, 'ada'),
      pusherJs(two, 'bob'),
      pusherJs(one, 'bob'),
    ]);
    await Promise.all([
      subscribed(p1!, 'shared'),
      subscribed(p2!, 'shared'),
      subscribed(p3!, 'shared'),
      subscribed(p1!, 'pusher-only'),
      subscribed(p1!, 'presence-shared'),
      subscribed(p2!, 'presence-shared'),
      subscribed(p3!, 'presence-shared'),
    ]);

    // The account API: PieSocket rows exactly as before (no new field), Pusher rows marked.
    const pieSocket = await until(
      'PieSocket counts',
      async () => (await get('/api/connections')).body as unknown[],
      (rows) => rows.length === 2 && JSON.stringify(rows).includes('"connection_count":3'),
    );
    expect(pieSocket).toEqual([
      { channel_id: 'shared', room_id: 'shared', connection_count: 3 },
      { channel_id: 'presence-shared', room_id: 'presence-shared', connection_count: 1 },
    ]);
    const pusher = await until(
      'Pusher counts',
      async () => (await get('/api/connections?family=pusher')).body as unknown[],
      (rows) => rows.length === 3,
    );
    expect(pusher).toEqual([
      { channel_id: 'presence-shared', room_id: 'presence-shared', connection_count: 3, family: 'pusher' },
      { channel_id: 'shared', room_id: 'shared', connection_count: 3, family: 'pusher' },
      { channel_id: 'pusher-only', room_id: 'pusher-only', connection_count: 1, family: 'pusher' },
    ]);
    expect((await get('/api/connections?page=1&limit=1&family=pusher')).body).toEqual({
      data: [
        { channel_id: 'presence-shared', room_id: 'presence-shared', connection_count: 3, family: 'pusher' },
      ],
      total: 3,
      page: 1,
      limit: 1,
      totalPages: 3,
    });
    expect((await get('/api/connections/sum')).body).toEqual({ connection_count: 4 });
    expect((await get('/api/connections/sum?family=pusher')).body).toEqual({ connection_count: 7 });
    expect((await get('/api/connections?family=v3')).status).toBe(400);

    // The Pusher HTTP API counts Pusher sockets only.
    const sdk = backend(two);
    const channel = await sdk.get({ path: '/channels/shared', params: { info: 'subscription_count' } });
    expect(await channel.json()).toEqual({ occupied: true, subscription_count: 3 });
    const presence = await sdk.get({
      path: '/channels/presence-shared',
      params: { info: 'user_count,subscription_count' },
    });
    expect(await presence.json()).toEqual({ occupied: true, user_count: 2, subscription_count: 3 });
    const users = (await (await sdk.get({ path: '/channels/presence-shared/users' })).json()) as {
      users: Array<{ id: string }>;
    };
    expect(users.users.map((user) => user.id).sort()).toEqual(['ada', 'bob']);

    // Members: the V4 member of `shared` and the Pusher members of `presence-shared`, each
    // marked; Pusher's per user (Bob's two sockets on two gateways are one member).
    const members = (await get('/api/members')).body as Record<
      string,
      Array<{ protocol: string; user?: unknown }>
    >;
    expect(members['shared']).toEqual([{ uuid: 'u-ada-v4', user: 'ada', protocol: 'v4' }]);
    expect(members['presence-shared']?.map((m) => m.protocol)).toEqual(['v4', 'pusher', 'pusher']);
    expect(members['presence-shared']?.[0]).toEqual({ uuid: 'u-carol', user: 'carol', protocol: 'v4' });
    expect(new Set(members['presence-shared']?.slice(1).map((m) => m.user))).toEqual(new Set(['ada', 'bob']));
    const v4Members = (await get('/api/channel-members?channel=presence-shared&protocol=v4')).body as {
      data: unknown[];
    };
    expect(v4Members.data).toEqual([{ uuid: 'u-carol', user: 'carol', protocol: 'v4' }]);
  });

  it('lists a Pusher presence user once, by its most recent socket, paged, gone after its last tab', async () => {
    const channel = 'presence-tabs';
    // Dana's first tab on gateway one, Erin on gateway two, Dana's second tab on gateway two.
    const danaTab1 = await pusherJs(one, 'dana');
    await subscribed(danaTab1, channel);
    const erin = await pusherJs(two, 'erin');
    await subscribed(erin, channel);
    const danaTab2 = await pusherJs(two, 'dana');
    await subscribed(danaTab2, channel);
    const listed = (client: PusherJs, user: string) => ({
      uuid: client.connection.socket_id,
      user,
      info: { name: user },
      protocol: 'pusher',
    });
    const users = async (page: number, limit: number) =>
      (await get(`/api/channel-members?channel=${channel}&protocol=pusher&page=${page}&limit=${limit}`))
        .body as { data: Array<{ uuid: string }>; total: number };

    expect(((await get('/api/members')).body as Record<string, unknown>)[channel]).toEqual([
      listed(danaTab2, 'dana'),
      listed(erin, 'erin'),
    ]);
    expect(await users(1, 100)).toEqual({
      data: [listed(danaTab2, 'dana'), listed(erin, 'erin')],
      total: 2,
      page: 1,
      limit: 100,
      totalPages: 1,
    });
    // One user a page: none repeated, none skipped; the count is the Pusher HTTP API's user_count.
    const pages = [await users(1, 1), await users(2, 1), await users(3, 1)];
    expect(pages.map((page) => page.data)).toEqual([[listed(danaTab2, 'dana')], [listed(erin, 'erin')], []]);
    expect(pages.map((page) => page.total)).toEqual([2, 2, 2]);
    const state = await backend(one).get({ path: `/channels/${channel}`, params: { info: 'user_count' } });
    expect(await state.json()).toEqual({ occupied: true, user_count: 2 });

    // Dana's latest tab closes: she is listed by her first one; after her last, she is gone.
    const latest = danaTab2.connection.socket_id;
    danaTab2.disconnect();
    expect(
      await until(
        'Dana listed by her first tab',
        () => users(1, 100),
        (page) => page.data.every((member) => member.uuid !== latest),
      ),
    ).toMatchObject({ data: [listed(erin, 'erin'), listed(danaTab1, 'dana')], total: 2 });
    danaTab1.disconnect();
    expect(
      await until(
        'Dana gone',
        () => users(1, 100),
        (page) => page.total === 1,
      ),
    ).toMatchObject({
      data: [listed(erin, 'erin')],
    });
    expect(((await get('/api/members')).body as Record<string, unknown>)[channel]).toEqual([
      listed(erin, 'erin'),
    ]);
  });

  it('publishes from the account API to Pusher channels as a Pusher event, to Pusher sockets only', async () => {
    const js = await pusherJs(two, 'carol');
    const channel = await subscribed(js, 'console-pusher');
    const v4 = await raw(one, '/v4/console-pusher');
    const received = (event: string) =>
      new Promise<unknown>((resolve) => channel.bind(event, (data: unknown) => resolve(data)));
    const publish = (body: object) => post('/api/messages', { channel: 'console-pusher', ...body });

    const named = received('order-shipped');
    const answer = await publish({ protocol: 'pusher', event: 'order-shipped', message: { id: 7 } });
    expect(answer.status).toBe(200);
    expect(await named).toEqual({ id: 7 });

    // No event named: the documented default, `message`; a string goes as the data itself.
    const unnamed = received('message');
    expect((await publish({ protocol: 'pusher', message: 'hi' })).status).toBe(200);
    expect(await unnamed).toBe('hi');

    // Refused: a reserved event name, and an event on a PieSocket publish.
    expect((await publish({ protocol: 'pusher', event: 'pusher:subscribe', message: 'x' })).status).toBe(400);
    expect((await publish({ protocol: 'v4', event: 'order-shipped', message: 'x' })).status).toBe(400);
    // The V4 socket of the same channel name heard none of it.
    await v4.expectSilence(() => true, 100);
  });
});
