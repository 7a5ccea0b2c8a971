import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import {
  connectClient,
  createTestKey,
  localPusherJs,
  nextPusherEvent as next,
  pusherBackend,
  pusherJsConnected,
  pusherJsSubscribed as subscribed,
  pusherSocketId,
  signInPusherSocket,
  startGateway,
} from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';
import Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { Channel, PresenceChannel } from 'pusher-js';
import type { default as EchoClass } from 'laravel-echo' with { 'resolution-mode': 'import' };
import { bodyMd5, hmacHex } from '../../src/protocols/pusher';
import { expectEchoWhisperAndPresence } from './support';

// Laravel Echo ships as an ES module with a CommonJS build, which is what the tests load.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Echo = (require('laravel-echo') as { default: typeof EchoClass }).default;

/**
 * The Pusher Channels protocol served by real gateways: two of them on one real Redis, `pusher-js`
 * 8 (Node) as the client, the `pusher` server SDK as the backend (channel authorization and every
 * HTTP API call), raw WebSockets where a frame or a close code is the point.
 */

let redis: RedisServer;
let one: TestGateway;
let two: TestGateway;
let app: ApiKeyRecord;
const clients: PusherJs[] = [];
const raws: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = {
    REDIS_URL: redis.url,
    MAX_MESSAGE_BYTES: '65536',
    PUSHER_MAX_PRESENCE_MEMBERS: '3',
    PUSHER_CLIENT_EVENTS_PER_SECOND: '5',
  };
  one = await startGateway({ env });
  two = await startGateway({ env });
  app = await createTestKey(one.engine);
}, 30_000);
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
  for (const raw of raws.splice(0)) raw.close();
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await redis?.stop();
});

/** The app's backend: the `pusher` server SDK pointed at a gateway's HTTP port. */
/** The master key end-to-end encrypted channels derive their secrets from (the backend's, never the server's). */
const encryptionMasterKeyBase64 = Buffer.alloc(32, 9).toString('base64');

const backend = (gateway: TestGateway, overrides: { secret?: string; appId?: string } = {}): Pusher =>
  pusherBackend(app, gateway.port, { encryptionMasterKeyBase64, ...overrides });

interface As {
  /** Sign channel auth with this secret instead of the app's (a broken auth endpoint). */
  secret?: string;
  /** The user a presence auth endpoint answers for. */
  user?: { id: string; info?: Record<string, unknown> };
}

/** A pusher-js client on `gateway`, its channels authorized by the SDK (`authorizeChannel`), connected. */
async function connect(gateway: TestGateway, as: As = {}): Promise<PusherJs> {
  const signer = backend(gateway, { secret: as.secret ?? app.secret });
  const client = localPusherJs({
    key: app.key,
    port: gateway.port,
    signer,
    presence: { user_id: as.user?.id ?? 'anonymous', user_info: as.user?.info ?? {} },
    userAuthentication: {
      endpoint: '/unused',
      transport: 'ajax',
      customHandler: ({ socketId }, callback) =>
        callback(null, signer.authenticateUser(socketId, { id: as.user?.id ?? 'anonymous' })),
    },
  });
  clients.push(client);
  await pusherJsConnected(client);
  return client;
}

/** Every `event` of the channel, as received. */
function collect(channel: Channel, event: string): unknown[] {
  const all: unknown[] = [];
  channel.bind(event, (data: unknown) => all.push(data));
  return all;
}

async function raw(
  gateway: TestGateway,
  path: string,
  headers?: Record<string, string>,
): Promise<TestClient> {
  const client = await connectClient(`ws://127.0.0.1:${gateway.port}${path}`, headers);
  raws.push(client);
  return client;
}

describe('connection', () => {
  it('greets with pusher:connection_established: a socket id and the activity timeout', async () => {
    const client = await raw(one, `/app/${app.key}?protocol=7&client=js&version=8.4.0`);
    const frame = await client.next();
    expect(frame.json?.['event']).toBe('pusher:connection_established');
    const data = JSON.parse(frame.json?.['data'] as string) as Record<string, unknown>;
    expect(data['socket_id']).toMatch(/^\d+\.\d+$/);
    expect(data['activity_timeout']).toBe(120);
    const js = await connect(two);
    expect(js.connection.socket_id).toMatch(/^\d+\.\d+$/);
    expect(js.connection.socket_id).not.toBe(data['socket_id']);
  });

  it('answers pusher:ping with pusher:pong', async () => {
    const client = await raw(one, `/app/${app.key}?protocol=7`);
    await client.nextEvent('pusher:connection_established');
    client.send({ event: 'pusher:ping', data: {} });
    expect((await client.nextEvent('pusher:pong')).json).toEqual({ event: 'pusher:pong', data: {} });
  });

  it.each([
    ['an unknown key', '/app/nosuchkey?protocol=7', {}, 4001],
    ['a missing protocol', `/app/KEY`, {}, 4007],
    ['protocol 5', `/app/KEY?protocol=5`, {}, 4007],
  ])('refuses %s with pusher:error and the same close code', async (_name, path, headers, code) => {
    const client = await raw(one, path.replace('KEY', app.key), headers);
    const error = await client.nextEvent('pusher:error');
    expect((error.json?.['data'] as { code: number }).code).toBe(code);
    expect((await client.closed).code).toBe(code);
  });

  it('refuses an origin the key does not allow with 4009', async () => {
    const guarded = await createTestKey(one.engine, { domains: ['example.com'] });
    const client = await raw(one, `/app/${guarded.key}?protocol=7`, { origin: 'https://evil.test' });
    expect((await client.closed).code).toBe(4009);
  });

  it('refuses a socket over the key’s connection quota with 4004', async () => {
    const limited = await createTestKey(one.engine, { limits: { connections: 1 } });
    const first = await raw(one, `/app/${limited.key}?protocol=7`);
    await first.nextEvent('pusher:connection_established');
    const second = await raw(two, `/app/${limited.key}?protocol=7`);
    expect((await second.closed).code).toBe(4004);
  });
});

describe('public channels and the HTTP API', () => {
  it('delivers a trigger to subscribers on both gateways, once each', async () => {
    const [a, b] = await Promise.all([connect(one), connect(two)]);
    const [onA, onB] = await Promise.all([subscribed(a, 'orders'), subscribed(b, 'orders')]);
    const gotA = next(onA, 'order-shipped');
    const gotB = next(onB, 'order-shipped');
    await backend(two).trigger('orders', 'order-shipped', { id: 7 });
    expect(await gotA).toEqual({ id: 7 });
    expect(await gotB).toEqual({ id: 7 });
  });

  it('leaves out the socket_id of a trigger, on whichever gateway it is', async () => {
    const [a, b] = await Promise.all([connect(one), connect(two)]);
    const [onA, onB] = await Promise.all([subscribed(a, 'excluding'), subscribed(b, 'excluding')]);
    const seenA = collect(onA, 'tick');
    const seenB = collect(onB, 'tick');
    // Excluding A (on gateway one) through gateway two, then B (on gateway two) through two.
    await backend(two).trigger('excluding', 'tick', { n: 1 }, { socket_id: a.connection.socket_id });
    await backend(two).trigger('excluding', 'tick', { n: 2 }, { socket_id: b.connection.socket_id });
    const last = Promise.all([next(onA, 'done'), next(onB, 'done')]);
    await backend(one).trigger('excluding', 'done', {});
    await last;
    expect(seenA).toEqual([{ n: 2 }]);
    expect(seenB).toEqual([{ n: 1 }]);
  });

  it('triggers one event to 100 channels, and a batch', async () => {
    const a = await connect(one);
    const names = Array.from({ length: 100 }, (_, i) => `fan-${i}`);
    const [first, last] = await Promise.all([subscribed(a, 'fan-0'), subscribed(a, 'fan-99')]);
    const got = Promise.all([next(first, 'wide'), next(last, 'wide')]);
    await backend(two).trigger(names, 'wide', 'hello');
    expect(await got).toEqual(['hello', 'hello']);

    const batched = Promise.all([next(first, 'b1'), next(last, 'b2')]);
    await backend(two).triggerBatch([
      { channel: 'fan-0', name: 'b1', data: { one: 1 } },
      { channel: 'fan-99', name: 'b2', data: { two: 2 } },
    ]);
    expect(await batched).toEqual([{ one: 1 }, { two: 2 }]);
  });

  it('answers channel queries with cluster-wide counts', async () => {
    const [a, b] = await Promise.all([connect(one), connect(two)]);
    await Promise.all([subscribed(a, 'counted-x'), subscribed(b, 'counted-x'), subscribed(b, 'counted-y')]);
    const sdk = backend(one);
    const list = await sdk.get({
      path: '/channels',
      params: { filter_by_prefix: 'counted-', info: 'subscription_count' },
    });
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({
      channels: { 'counted-x': { subscription_count: 2 }, 'counted-y': { subscription_count: 1 } },
    });
    const channel = await sdk.get({ path: '/channels/counted-x', params: { info: 'subscription_count' } });

    expect(await channel.json()).toEqual({ occupied: true, subscription_count: 2 });
    const empty = await sdk.get({ path: '/channels/nobody-here' });
    expect(await empty.json()).toEqual({ occupied: false });
  });

  it('refuses bad signatures (401), stale timestamps (401), unknown app ids (404) and large bodies (413)', async () => {
    await expect(backend(one, { secret: 'wrong' }).trigger('x', 'e', {})).rejects.toMatchObject({
      status: 401,
    });
    await expect(backend(one, { appId: 'other-app' }).trigger('x', 'e', {})).rejects.toMatchObject({
      status: 404,
    });
    await expect(backend(one).trigger('x', 'e', 'y'.repeat(70_000))).rejects.toMatchObject({ status: 413 });

    // The SDK always signs with the current time: a request signed 11 minutes ago, by hand.
    const body = JSON.stringify({ name: 'e', channel: 'x', data: '{}' });
    const params: Record<string, string> = {
      auth_key: app.key,
      auth_timestamp: String(Math.floor(Date.now() / 1000) - 660),
      auth_version: '1.0',
      body_md5: bodyMd5(body),
    };
    const path = `/apps/${app.key}/events`;
    const sorted = Object.keys(params)
      .sort()
      .map((name) => `${name}=${params[name]}`)
      .join('&');
    const signature = hmacHex(app.secret, `POST\n${path}\n${sorted}`);
    const stale = await post(one, `${path}?${sorted}&auth_signature=${signature}`, body);
    expect(stale.status).toBe(401);
    expect(stale.body).toMatch(/Timestamp expired/);
  });
});

describe('failed authentication', () => {
  it('counts bad signatures against the client address: refused with 429 past AUTH_FAILURES_PER_ADDRESS', async () => {
    const own = await startGateway({ env: { REDIS_URL: redis.url, AUTH_FAILURES_PER_ADDRESS: '2' } });
    try {
      const wrong = backend(own, { secret: 'wrong' });
      await expect(wrong.trigger('x', 'e', {})).rejects.toMatchObject({ status: 401 });
      await expect(wrong.trigger('x', 'e', {})).rejects.toMatchObject({ status: 401 });
      // The address is over its limit now: even a well-signed request is refused for a while.
      await expect(backend(own).trigger('x', 'e', {})).rejects.toMatchObject({ status: 429 });
    } finally {
      await own.close();
    }
  });
});

describe('history', () => {
  it('keeps Pusher channels’ events with offsets, readable through POST /api/pusher/history', async () => {
    await backend(one).trigger('kept', 'first', { n: 1 });
    await backend(two).trigger('kept', 'second', { n: 2 });
    const read = await post(
      one,
      '/api/pusher/history',
      JSON.stringify({ key: app.key, secret: app.secret, channel: 'kept' }),
    );
    expect(read.status).toBe(200);
    const page = JSON.parse(read.body) as {
      offset: number;
      publications: { offset: number; message: string }[];
    };
    expect(page.offset).toBe(2);
    expect(page.publications.map((p) => JSON.parse(p.message) as unknown)).toEqual([
      { event: 'first', channel: 'kept', data: '{"n":1}' },
      { event: 'second', channel: 'kept', data: '{"n":2}' },
    ]);
    // The V4 topic of the same name is another one.
    const v4 = await post(
      one,
      '/api/v4/history',
      JSON.stringify({ key: app.key, secret: app.secret, channel: 'kept' }),
    );
    expect((JSON.parse(v4.body) as { offset: number }).offset).toBe(0);
  });
});

describe('quotas', () => {
  it('answers 403 once the key’s daily message quota is used up', async () => {
    const limited = await createTestKey(one.engine, { limits: { messagesPerDay: 1 } });
    const sdk = pusherBackend(limited, one.port);
    await sdk.trigger('quota', 'e', {});
    await expect(sdk.trigger('quota', 'e', {})).rejects.toMatchObject({ status: 403 });
  });
});

describe('private channels and client events', () => {
  it('authorizes with the SDK’s authorizeChannel and refuses a wrong signature', async () => {
    const good = await connect(one);
    await subscribed(good, 'private-room');
    const bad = await connect(two, { secret: 'not-the-secret' });
    await expect(subscribed(bad, 'private-room')).rejects.toThrow(/AuthError/);
  });

  it('relays client events to the other gateway, never back to the sender', async () => {
    const [a, b] = await Promise.all([connect(one), connect(two)]);
    const [onA, onB] = await Promise.all([subscribed(a, 'private-chat'), subscribed(b, 'private-chat')]);
    const seenA = collect(onA, 'client-typing');
    const fromA = next(onB, 'client-typing');
    onA.trigger('client-typing', { who: 'a' });
    expect(await fromA).toEqual({ who: 'a' });
    const fromB = next(onA, 'client-typing');
    onB.trigger('client-typing', { who: 'b' });
    expect(await fromB).toEqual({ who: 'b' });
    expect(seenA).toEqual([{ who: 'b' }]);
  });

  it('refuses client events on public channels', async () => {
    const client = await raw(one, `/app/${app.key}?protocol=7`);
    await client.nextEvent('pusher:connection_established');
    client.send({ event: 'pusher:subscribe', data: { channel: 'public-room' } });
    await client.nextEvent('pusher_internal:subscription_succeeded');
    client.send({ event: 'client-x', channel: 'public-room', data: {} });
    const error = await client.nextEvent('pusher:error');
    expect(error.json?.['data']).toMatchObject({ code: null });
  });
});

describe('presence channels', () => {
  it('announces a user once across gateways, however many tabs it has, and removes it after its last', async () => {
    const observer = await connect(one, { user: { id: 'watcher' } });
    const room = (await subscribed(observer, 'presence-lobby')) as PresenceChannel;
    const added = collect(room, 'pusher:member_added');
    const removed = collect(room, 'pusher:member_removed');
    const firstTab = await connect(one, { user: { id: 'ann', info: { name: 'Ann' } } });
    const secondTab = await connect(two, { user: { id: 'ann', info: { name: 'Ann' } } });
    const joined = next(room, 'pusher:member_added');
    const tab1Added = collect(firstTab.subscribe('presence-lobby'), 'pusher:member_added');
    const tab1 = (await subscribed(firstTab, 'presence-lobby')) as PresenceChannel;
    expect(await joined).toEqual({ id: 'ann', info: { name: 'Ann' } });
    const tab2 = (await subscribed(secondTab, 'presence-lobby')) as PresenceChannel;
    // Each tab's roster: both users, once each; a tab never hears of its own arrival.
    expect(tab2.members.count).toBe(2);
    expect(tab2.members.get('ann')).toMatchObject({ info: { name: 'Ann' } });
    expect(tab1.members.count).toBe(2);

    firstTab.unsubscribe('presence-lobby');
    // A sentinel through the channel's own fan-out: the leave of the first tab announced nothing.
    const sentinel = next(room, 'sentinel');
    await backend(two).trigger('presence-lobby', 'sentinel', {});
    await sentinel;
    expect(removed).toEqual([]);
    const gone = next(room, 'pusher:member_removed');
    secondTab.disconnect();
    expect(await gone).toEqual({ id: 'ann', info: { name: 'Ann' } });
    expect(added).toEqual([{ id: 'ann', info: { name: 'Ann' } }]);
    expect(tab1Added).toEqual([]);
    expect(room.members.count).toBe(1);
  });

  it('adds user_id to client events on presence channels and answers the users query', async () => {
    const [a, b] = await Promise.all([
      connect(one, { user: { id: 'u-a' } }),
      connect(two, { user: { id: 'u-b' } }),
    ]);
    const [onA, onB] = await Promise.all([subscribed(a, 'presence-talk'), subscribed(b, 'presence-talk')]);
    void onA;
    const got = new Promise<unknown>((resolve) =>
      onB.bind('client-hi', (data: unknown, meta: { user_id?: string }) => resolve({ data, meta })),
    );
    onA.trigger('client-hi', { text: 'hello' });
    expect(await got).toEqual({ data: { text: 'hello' }, meta: { user_id: 'u-a' } });
    const users = await backend(one).get({ path: '/channels/presence-talk/users' });
    const ids = ((await users.json()) as { users: { id: string }[] }).users.map((user) => user.id).sort();
    expect(ids).toEqual(['u-a', 'u-b']);
    const info = await backend(two).get({ path: '/channels/presence-talk', params: { info: 'user_count' } });
    expect(await info.json()).toEqual({ occupied: true, user_count: 2 });
  });

  it('refuses a new user over PUSHER_MAX_PRESENCE_MEMBERS, not another tab of a member', async () => {
    const members = await Promise.all(
      ['m1', 'm2', 'm3'].map((id, i) => connect(i % 2 ? two : one, { user: { id } })),
    );
    for (const member of members) await subscribed(member, 'presence-small');
    const again = await connect(two, { user: { id: 'm2' } });
    await subscribed(again, 'presence-small');
    const fourth = await connect(one, { user: { id: 'm4' } });
    await expect(subscribed(fourth, 'presence-small')).rejects.toThrow(/limit of 3 members/);
  });

  it('admits exactly PUSHER_MAX_PRESENCE_MEMBERS of many users joining at once on two gateways', async () => {
    const users = Array.from({ length: 12 }, (_, i) => `racer${i}`);
    const racers = await Promise.all(users.map((id, i) => connect(i % 2 ? two : one, { user: { id } })));
    // Every subscribe goes out in one turn: the gateways' checks before the join all see an empty channel.
    const outcomes = await Promise.all(
      racers.map((racer) =>
        subscribed(racer, 'presence-race').then(
          () => 'in' as const,
          (error: Error) => {
            expect(error.message).toMatch(/limit of 3 members/);
            return 'refused' as const;
          },
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'in')).toHaveLength(3);
    const users3 = await backend(two).get({ path: '/channels/presence-race/users' });
    expect(((await users3.json()) as { users: unknown[] }).users).toHaveLength(3);
    const info = await backend(one).get({
      path: '/channels/presence-race',
      params: { info: 'user_count,subscription_count' },
    });
    expect(await info.json()).toEqual({ occupied: true, user_count: 3, subscription_count: 3 });
  });

  it('drops client events over PUSHER_CLIENT_EVENTS_PER_SECOND with pusher:error 4301, the socket open', async () => {
    const client = await raw(one, `/app/${app.key}?protocol=7`);
    const auth = backend(one).authorizeChannel(await pusherSocketId(client), 'private-burst').auth;
    client.send({ event: 'pusher:subscribe', data: { channel: 'private-burst', auth } });
    await client.nextEvent('pusher_internal:subscription_succeeded');
    for (let i = 0; i < 6; i++) client.send({ event: 'client-burst', channel: 'private-burst', data: { i } });
    const error = await client.nextEvent('pusher:error');
    expect(error.json?.['data']).toEqual({ code: 4301, message: 'Client event rejected due to rate limit' });
    client.send({ event: 'pusher:ping', data: {} });
    await client.nextEvent('pusher:pong');
  });
});

describe('watchlists', () => {
  it('tells a watcher, on any gateway, when a watched user comes online (its first socket) and goes offline (its last)', async () => {
    const watcher = await signIn(one, 'wl-a', ['wl-b', 'wl-c']);
    const firstTab = await signIn(two, 'wl-b');
    const online = await watcher.nextEvent('pusher_internal:watchlist_events');
    expect(watchlistEvent(online)).toEqual([{ name: 'online', user_ids: ['wl-b'] }]);
    const secondTab = await signIn(one, 'wl-b');
    firstTab.close();
    await firstTab.closed;
    // The second tab keeps wl-b online: the next event is its going offline after the last tab.
    secondTab.close();
    const offline = await watcher.nextEvent('pusher_internal:watchlist_events');
    expect(watchlistEvent(offline)).toEqual([{ name: 'offline', user_ids: ['wl-b'] }]);

    // A watcher signing in while a watched user is online is told at once.
    const present = await signIn(two, 'wl-c');
    void present;
    const late = await signIn(two, 'wl-d', ['wl-c', 'wl-b']);
    const initial = await late.nextEvent('pusher_internal:watchlist_events');
    expect(watchlistEvent(initial)).toEqual([{ name: 'online', user_ids: ['wl-c'] }]);
  });
});

describe('encrypted and cache channels', () => {
  it('passes ciphertext of a private-encrypted channel through, and refuses client events there', async () => {
    const client = await connect(two);
    const vault = await subscribed(client, 'private-encrypted-vault');
    const got = next(vault, 'secret');
    await backend(one).trigger('private-encrypted-vault', 'secret', { code: 42 });
    expect(await got).toEqual({ code: 42 });

    const rawClient = await raw(one, `/app/${app.key}?protocol=7`);
    const { auth } = backend(one).authorizeChannel(
      await pusherSocketId(rawClient),
      'private-encrypted-vault',
    );
    rawClient.send({ event: 'pusher:subscribe', data: { channel: 'private-encrypted-vault', auth } });
    await rawClient.nextEvent('pusher_internal:subscription_succeeded');
    rawClient.send({ event: 'client-x', channel: 'private-encrypted-vault', data: {} });
    const error = await rawClient.nextEvent('pusher:error');
    expect(error.json?.['data']).toMatchObject({ code: null, message: expect.stringContaining('encrypted') });
  });

  it('sends pusher:cache_miss to the first subscriber of a cache channel, then replays the last event', async () => {
    const first = await connect(one);
    const missChannel = first.subscribe('cache-scores');
    await new Promise((resolve) => missChannel.bind('pusher:cache_miss', resolve));
    await backend(two).trigger('cache-scores', 'score', { home: 1 });
    await backend(two).trigger('cache-scores', 'score', { home: 2 });
    const later = await connect(two);
    const hit = later.subscribe('cache-scores');
    expect(await next(hit, 'score')).toEqual({ home: 2 });
    const info = await backend(one).get({ path: '/channels/cache-scores', params: { info: 'cache' } });
    // Kept as Pusher keeps it (PUSHER_CACHE_TTL_SECONDS, 30 minutes), not HISTORY_TTL_SECONDS (120 s).
    expect(await info.json()).toEqual({ occupied: true, cache: { data: '{"home":2}', ttl: 1800 } });
  });
});

/** A raw socket signed in as `id` (watching `watchlist`), once its pusher:signin_success arrived. */
async function signIn(gateway: TestGateway, id: string, watchlist?: string[]): Promise<TestClient> {
  const client = await raw(gateway, `/app/${app.key}?protocol=7`);
  await signInPusherSocket(client, backend(gateway), { id, ...(watchlist ? { watchlist } : {}) });
  return client;
}

const watchlistEvent = (frame: { json: Record<string, unknown> | undefined }): unknown =>
  (frame.json?.['data'] as { events: unknown }).events;

describe('users', () => {
  it('signs in, and server-to-user events reach every socket of the user on any gateway', async () => {
    const [a, b] = await Promise.all([
      connect(one, { user: { id: 'ada' } }),
      connect(two, { user: { id: 'ada' } }),
    ]);
    // Signed in once pusher-js's own subscription to its server-to-user channel succeeded.
    const signedIn = (client: PusherJs): Promise<void> =>
      new Promise((resolve) => {
        client.connection.bind('message', (message: { event: string; channel?: string }) => {
          if (
            message.event === 'pusher_internal:subscription_succeeded' &&
            message.channel === '#server-to-user-ada'
          )
            resolve();
        });
        client.signin();
      });
    await Promise.all([signedIn(a), signedIn(b)]);
    const notes = [a, b].map((client) => new Promise((resolve) => client.user.bind('note', resolve)));
    await backend(one).sendToUser('ada', 'note', { hi: 1 });
    expect(await Promise.all(notes)).toEqual([{ hi: 1 }, { hi: 1 }]);
    // A user's own channel is never listed.
    const list = await backend(two).get({ path: '/channels' });
    const listed = Object.keys(((await list.json()) as { channels: Record<string, unknown> }).channels);
    expect(listed).not.toContain('#server-to-user-ada');
  });

  it('refuses #server-to-user-<id> to a socket not signed in as <id>', async () => {
    const client = await raw(one, `/app/${app.key}?protocol=7`);
    await client.nextEvent('pusher:connection_established');
    client.send({ event: 'pusher:subscribe', data: { channel: '#server-to-user-ada' } });
    const error = await client.nextEvent('pusher:subscription_error');
    expect(error.json?.['data']).toMatchObject({ type: 'AuthError', status: 403 });
  });

  it('terminates a signed-in user’s connections on every gateway (4009), and only theirs', async () => {
    const [onOne, onTwo, other] = await Promise.all([
      signIn(one, 'zed'),
      signIn(two, 'zed'),
      signIn(two, 'amy'),
    ]);
    await backend(one).terminateUserConnections('zed');
    expect((await onOne.closed).code).toBe(4009);
    expect((await onTwo.closed).code).toBe(4009);
    other.send({ event: 'pusher:ping', data: {} });
    await other.nextEvent('pusher:pong');
  });
});

describe('Laravel Echo 2 (pusher broadcaster)', () => {
  it('listens on a public channel, whispers across gateways and tracks a presence channel', async () => {
    const adaClient = await connect(one, { user: { id: '1', info: { name: 'Ada' } } });
    const bobClient = await connect(two, { user: { id: '2', info: { name: 'Bob' } } });
    const ada = new Echo({ broadcaster: 'pusher', key: app.key, client: adaClient });
    const bob = new Echo({ broadcaster: 'pusher', key: app.key, client: bobClient });
    const subscribedVia = (channel: { subscribed(callback: () => void): unknown }): Promise<void> =>
      new Promise((resolve) => channel.subscribed(() => resolve()));

    const shipped = new Promise<unknown>((resolve) =>
      ada.channel('echo-orders').listen('.OrderShipped', resolve),
    );
    await subscribedVia(ada.channel('echo-orders'));
    await backend(two).trigger('echo-orders', 'OrderShipped', { order: { id: 5 } });
    expect(await shipped).toEqual({ order: { id: 5 } });

    await expectEchoWhisperAndPresence(ada, bob);
  });
});

describe('webhooks', () => {
  it('sends Pusher channels’ events that the SDK’s webhook() verifies: one member_added/removed per user across gateways', async () => {
    type Event = { name: string; channel: string; user_id?: string; event?: string; socket_id?: string };
    const hooked = await createTestKey(one.engine);
    const received: Event[] = [];
    let waiting: { until: (events: Event[]) => boolean; resolve: () => void } | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const verifier = new Pusher({
          appId: hooked.key,
          key: hooked.key,
          secret: hooked.secret,
          host: '127.0.0.1',
        });
        const webhook = verifier.webhook({
          headers: req.headers as IncomingHttpHeaders & Record<string, string>,
          rawBody: Buffer.concat(chunks).toString('utf8'),
        });
        if (webhook.isValid()) received.push(...(webhook.getEvents() as Event[]));
        else received.push({ name: 'INVALID', channel: '' });
        res.end('{}');
        if (waiting?.until(received)) waiting.resolve();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const arrived = (until: (events: Event[]) => boolean): Promise<void> =>
      until(received) ? Promise.resolve() : new Promise((resolve) => (waiting = { until, resolve }));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
      await one.engine.keys.put({
        ...hooked,
        webhook: { url, events: ['member_added', 'member_removed', 'client_event', 'cache_miss'] },
      });
      const as = (id: string) => ({ user: { id } });
      const connectHooked = async (gateway: TestGateway, id: string): Promise<PusherJs> => {
        const signer = pusherBackend(hooked, gateway.port);
        const client = localPusherJs({
          key: hooked.key,
          port: gateway.port,
          signer,
          presence: { user_id: as(id).user.id },
        });
        clients.push(client);
        await pusherJsConnected(client);
        return client;
      };
      const [tab1, tab2] = await Promise.all([connectHooked(one, 'w1'), connectHooked(two, 'w1')]);
      await subscribed(tab1, 'presence-hooks');
      await subscribed(tab2, 'presence-hooks');
      const private1 = await subscribed(tab1, 'private-hooks');
      await subscribed(tab2, 'private-hooks');
      private1.trigger('client-hook', { n: 1 });
      const cache = tab2.subscribe('cache-hooks');
      await new Promise((resolve) => cache.bind('pusher:cache_miss', resolve));
      tab1.unsubscribe('presence-hooks');
      tab2.unsubscribe('presence-hooks');
      await arrived(
        (events) =>
          events.some((e) => e.name === 'member_removed') &&
          events.some((e) => e.name === 'client_event') &&
          events.some((e) => e.name === 'cache_miss'),
      );
      expect(received.filter((e) => e.name === 'INVALID')).toEqual([]);
      expect(received.filter((e) => e.name === 'member_added')).toEqual([
        { name: 'member_added', channel: 'presence-hooks', user_id: 'w1' },
      ]);
      expect(received.filter((e) => e.name === 'member_removed')).toEqual([
        { name: 'member_removed', channel: 'presence-hooks', user_id: 'w1' },
      ]);
      expect(received.find((e) => e.name === 'client_event')).toMatchObject({
        channel: 'private-hooks',
        event: 'client-hook',
        data: '{"n":1}',
        socket_id: tab1.connection.socket_id,
      });
      expect(received.find((e) => e.name === 'cache_miss')).toEqual({
        name: 'cache_miss',
        channel: 'cache-hooks',
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('families', () => {
  it('keeps Pusher and PieSocket apart on the same key and channel name', async () => {
    const js = await connect(one);
    const pusherSide = await subscribed(js, 'shared');
    const seen = collect(pusherSide, 'from-v3');
    const v3 = await raw(two, `/v3/shared?api_key=${app.key}`);
    // A Pusher trigger does not reach the V3 socket; a V3 publish does not reach pusher-js.
    await backend(one).trigger('shared', 'from-pusher', {});
    const v3Publish = await post(
      two,
      '/api/publish',
      JSON.stringify({ key: app.key, secret: app.secret, channel: 'shared', message: '{"event":"from-v3"}' }),
    );
    expect(v3Publish.status).toBe(200);
    const v3Got = await v3.next();
    expect(v3Got.text).toBe('{"event":"from-v3"}');
    const last = next(pusherSide, 'done');
    await backend(two).trigger('shared', 'done', {});
    await last;
    expect(seen).toEqual([]);
    await v3.expectSilence(() => true, 100);
  });
});

describe('server pings', () => {
  it('pings a silent socket after activity_timeout and closes it with 4201 when no pong follows', async () => {
    const own = await startGateway({
      env: { REDIS_URL: redis.url, PUSHER_ACTIVITY_TIMEOUT_SECONDS: '5', PUSHER_PONG_TIMEOUT_SECONDS: '1' },
    });
    try {
      const silent = await raw(own, `/app/${app.key}?protocol=7`);
      const answering = await raw(own, `/app/${app.key}?protocol=7`);
      const greeting = await silent.nextEvent('pusher:connection_established');
      expect(JSON.parse(greeting.json?.['data'] as string)).toMatchObject({ activity_timeout: 5 });
      await answering.nextEvent('pusher:connection_established');
      await silent.nextEvent('pusher:ping', 8000);
      await answering.nextEvent('pusher:ping', 8000);
      answering.send({ event: 'pusher:pong', data: {} });
      const error = await silent.nextEvent('pusher:error', 5000);
      expect(error.json?.['data']).toEqual({ code: 4201, message: 'Pong reply not received' });
      expect((await silent.closed).code).toBe(4201);
      answering.send({ event: 'pusher:ping', data: {} });
      await answering.nextEvent('pusher:pong');
    } finally {
      await own.close();
    }
  }, 20_000);
});

describe('drain', () => {
  it('closes Pusher sockets with pusher:error 4200 and close code 4200', async () => {
    const own = await startGateway({ env: { REDIS_URL: redis.url } });
    try {
      const client = await raw(own, `/app/${app.key}?protocol=7`);
      await client.nextEvent('pusher:connection_established');
      void own.gateway.drain();
      const error = await client.nextEvent('pusher:error');
      expect(error.json?.['data']).toEqual({ code: 4200, message: 'Please reconnect immediately' });
      expect((await client.closed).code).toBe(4200);
    } finally {
      await own.close();
    }
  });
});

/** A raw POST to a gateway: status and text. */
function post(gateway: TestGateway, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: gateway.port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
