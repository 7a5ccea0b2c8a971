import type { default as EchoClass } from 'laravel-echo' with { 'resolution-mode': 'import' };
import Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { Members, PresenceChannel } from 'pusher-js';
import { localPusherJs } from '@switchboard/testing';
import {
  PUSHER_ERRORS,
  channelEvent,
  isPusherHttpError,
  parseEventBody,
  subscriptionCount,
  watchlistEvents,
} from '../../src/protocols/pusher';
import { type FrameHarness, startFrameHarness } from './frame-harness';
import { startSdkHarness } from './sdk-requests';
import { expectEchoWhisperAndPresence } from './support';

/**
 * The frame builders, the client frame parser and the verifiers against the real `pusher-js` 8
 * (its Node build, over a real WebSocket) and Laravel Echo 2: what the builders write is what
 * those clients understand, and what those clients send is what the parser reads.
 */

// Laravel Echo ships as an ES module with a CommonJS build, which is what the tests load.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Echo = (require('laravel-echo') as { default: typeof EchoClass }).default;

const app = { appId: 'app-1', key: 'app-key', secret: 'app-secret' };
/** The master key end-to-end encrypted channels derive their secrets from (the backend's, never the server's). */
const encryptionMasterKeyBase64 = Buffer.alloc(32, 9).toString('base64');
const backend = new Pusher({ ...app, host: '127.0.0.1', encryptionMasterKeyBase64 });

let harness: FrameHarness;
const clients: PusherJs[] = [];

beforeAll(async () => {
  harness = await startFrameHarness(app);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(() => harness.close());

interface ClientOptions {
  key?: string;
  /** The user a presence auth endpoint answers for. */
  user?: { id: string; info?: Record<string, unknown> };
  /** Sign channel auth with this secret instead of the app's (a broken auth endpoint). */
  secret?: string;
  watchlist?: string[];
}

/** A pusher-js client whose auth endpoints are the `pusher` server SDK, as a backend's are. */
function connect(options: ClientOptions = {}): PusherJs {
  const signer = options.secret ? new Pusher({ ...app, secret: options.secret, host: '127.0.0.1' }) : backend;
  const user = options.user ?? { id: 'anonymous' };
  const client = localPusherJs({
    key: options.key ?? app.key,
    port: harness.port,
    signer,
    presence: { user_id: user.id, user_info: user.info ?? {} },
    userAuthentication: {
      endpoint: '/unused',
      transport: 'ajax',
      customHandler: ({ socketId }, callback) => {
        const id = options.user?.id ?? 'anonymous';
        callback(null, backend.authenticateUser(socketId, { id, watchlist: options.watchlist ?? [] }));
      },
    },
  });
  clients.push(client);
  return client;
}

const connected = (client: PusherJs): Promise<string> =>
  new Promise((resolve) => client.connection.bind('connected', () => resolve(client.connection.socket_id)));

function onEvent<T>(bind: (callback: (data: T) => void) => void): Promise<T> {
  return new Promise((resolve) => bind(resolve));
}

const socketOf = (socketId: string) => {
  const socket = harness.sockets.find((s) => s.socketId === socketId);
  if (!socket) throw new Error(`no socket ${socketId}`);
  return socket;
};

describe('pusher-js 8 against the protocol modules', () => {
  it('reads connection_established: socket id and activity timeout', async () => {
    const client = connect();
    const socketId = await connected(client);
    expect(socketId).toMatch(/^7\.\d+$/);
    expect(client.connection.activityTimeout).toBe(120_000);
  });

  it('subscribes to a public channel and receives an API-triggered event with its data parsed', async () => {
    const client = connect();
    const channel = client.subscribe('orders');
    await onEvent((cb) => channel.bind('pusher:subscription_succeeded', cb));
    const received = onEvent<unknown>((cb) => channel.bind('OrderShipped', cb));
    harness.broadcast('orders', channelEvent('orders', 'OrderShipped', '{"id":7}'));
    expect(await received).toEqual({ id: 7 });
    const plain = onEvent<unknown>((cb) => channel.bind('plain', cb));
    harness.broadcast('orders', channelEvent('orders', 'plain', 'hello'));
    expect(await plain).toBe('hello');
    const count = onEvent<unknown>((cb) => channel.bind('pusher:subscription_count', cb));
    harness.broadcast('orders', subscriptionCount('orders', 3));
    expect(await count).toEqual({ subscription_count: 3 });
    expect((channel as unknown as { subscriptionCount: number }).subscriptionCount).toBe(3);
  });

  it('authorizes a private channel signed by the server SDK, and reports a bad signature as subscription_error', async () => {
    const good = connect();
    const channel = good.subscribe('private-orders');
    await onEvent((cb) => channel.bind('pusher:subscription_succeeded', cb));

    const bad = connect({ secret: 'wrong-secret' });
    const refused = bad.subscribe('private-orders');
    const error = await onEvent<{ type: string; error: string; status: number }>((cb) =>
      refused.bind('pusher:subscription_error', cb),
    );
    expect(error).toEqual({
      type: 'AuthError',
      error: expect.stringContaining('Invalid signature'),
      status: 401,
    });
  });

  it('keeps a presence roster: here, member_added once per user, member_removed after its last socket', async () => {
    const ada = connect({ user: { id: 'ada', info: { name: 'Ada' } } });
    const adaChannel = ada.subscribe('presence-room') as PresenceChannel;
    const adaMembers = await onEvent<Members>((cb) => adaChannel.bind('pusher:subscription_succeeded', cb));
    expect(adaMembers.count).toBe(1);
    expect(adaMembers.me).toEqual({ id: 'ada', info: { name: 'Ada' } });

    const added = onEvent<{ id: string; info: unknown }>((cb) => adaChannel.bind('pusher:member_added', cb));
    const bobTab1 = connect({ user: { id: 'bob', info: { name: 'Bob' } } });
    const bobChannel = bobTab1.subscribe('presence-room') as PresenceChannel;
    const bobMembers = await onEvent<Members>((cb) => bobChannel.bind('pusher:subscription_succeeded', cb));
    expect(bobMembers.count).toBe(2);
    expect(bobMembers.get('ada')).toEqual({ id: 'ada', info: { name: 'Ada' } });
    expect(await added).toEqual({ id: 'bob', info: { name: 'Bob' } });

    // A second tab of bob: no member_added for ada, roster still 2.
    const bobTab2 = connect({ user: { id: 'bob', info: { name: 'Bob' } } });
    const tab2Channel = bobTab2.subscribe('presence-room') as PresenceChannel;
    const tab2Members = await onEvent<Members>((cb) => tab2Channel.bind('pusher:subscription_succeeded', cb));
    expect(tab2Members.count).toBe(2);

    const removals: unknown[] = [];
    adaChannel.bind('pusher:member_removed', (member: unknown) => removals.push(member));
    bobTab1.unsubscribe('presence-room');
    await harness.next('unsubscribe');
    // A ping/pong round trip with ada: every frame sent to ada before the ping has been handled.
    harness.ping(socketOf(ada.connection.socket_id));
    await harness.next('pong');
    expect(removals).toEqual([]);
    const removed = onEvent<{ id: string }>((cb) => adaChannel.bind('pusher:member_removed', cb));
    bobTab2.unsubscribe('presence-room');
    expect(await removed).toEqual({ id: 'bob', info: { name: 'Bob' } });
    expect(adaChannel.members.count).toBe(1);
  });

  it('relays client events through the parser, with user_id on presence channels, refusing them on public ones', async () => {
    const ada = connect({ user: { id: 'ada' } });
    const bob = connect({ user: { id: 'bob' } });
    const adaChannel = ada.subscribe('presence-chat');
    const bobChannel = bob.subscribe('presence-chat');
    await Promise.all([
      onEvent((cb) => adaChannel.bind('pusher:subscription_succeeded', cb)),
      onEvent((cb) => bobChannel.bind('pusher:subscription_succeeded', cb)),
    ]);
    const whisper = new Promise<[unknown, unknown]>((resolve) =>
      bobChannel.bind('client-typing', (data: unknown, metadata: unknown) => resolve([data, metadata])),
    );
    expect(adaChannel.trigger('client-typing', { typing: true })).toBe(true);
    const command = await harness.next('client-event');
    expect(command).toMatchObject({ event: 'client-typing', dataJson: '{"typing":true}' });
    expect(await whisper).toEqual([{ typing: true }, { user_id: 'ada' }]);

    const open = ada.subscribe('lobby');
    await onEvent((cb) => open.bind('pusher:subscription_succeeded', cb));
    const error = onEvent<{ type: string; data: { code: number | null; message: string } }>((cb) =>
      ada.connection.bind('error', cb),
    );
    open.trigger('client-x', {});
    expect(await error).toEqual({
      type: 'PusherError',
      data: { code: null, message: expect.stringContaining('private and presence') },
    });
  });

  it('passes an encrypted event from the server SDK through the HTTP API body to pusher-js, which decrypts it', async () => {
    const client = connect();
    const vault = client.subscribe('private-encrypted-vault');
    await onEvent((cb) => vault.bind('pusher:subscription_succeeded', cb));
    const sdk = await startSdkHarness(app, { encryptionMasterKeyBase64 });
    try {
      const request = await sdk.capture((p) => p.trigger('private-encrypted-vault', 'secret', { code: 42 }));
      const event = parseEventBody(request.body, { maxBodyBytes: 65536, maxDataBytes: 10240 });
      if (isPusherHttpError(event)) throw new Error(event.body);
      // The server only ever holds ciphertext.
      expect(Object.keys(JSON.parse(event.data)).sort()).toEqual(['ciphertext', 'nonce']);
      const received = onEvent<unknown>((cb) => vault.bind('secret', cb));
      harness.broadcast(
        'private-encrypted-vault',
        channelEvent('private-encrypted-vault', event.name, event.data),
      );
      expect(await received).toEqual({ code: 42 });
    } finally {
      await sdk.close();
    }
  });

  it('replays a cache channel or sends pusher:cache_miss', async () => {
    const client = connect();
    const miss = client.subscribe('cache-scores');
    await onEvent((cb) => miss.bind('pusher:cache_miss', cb));
    harness.cache.set('cache-scores', channelEvent('cache-scores', 'score', '{"home":2}'));
    const other = connect();
    const hit = other.subscribe('cache-scores');
    expect(await onEvent<unknown>((cb) => hit.bind('score', cb))).toEqual({ home: 2 });
  });

  it('signs in, receives server-to-user events and watchlist events', async () => {
    const client = connect({ user: { id: 'ada' }, watchlist: ['bob'] });
    client.signin();
    const signin = (await harness.next('signin')) as { userData: string };
    expect(JSON.parse(signin.userData)).toEqual({ id: 'ada', watchlist: ['bob'] });
    // pusher-js subscribes to its server-to-user channel once signed in.
    const subscribe = await harness.next('subscribe');
    expect(subscribe).toMatchObject({ channel: { name: '#server-to-user-ada', kind: 'server-to-user' } });
    const note = onEvent<unknown>((cb) => client.user.bind('note', cb));
    // Subscriptions are handled in order: the succeeded frame is out before this event.
    harness.broadcast('#server-to-user-ada', channelEvent('#server-to-user-ada', 'note', '{"hi":1}'));
    expect(await note).toEqual({ hi: 1 });

    const online = onEvent<unknown>((cb) => client.user.watchlist.bind('online', cb));
    socketOf(client.connection.socket_id).ws.send(watchlistEvents([{ name: 'online', user_ids: ['bob'] }]));
    expect(await online).toEqual({ name: 'online', user_ids: ['bob'] });
  });

  it('answers a server ping with pusher:pong', async () => {
    const client = connect();
    const socketId = await connected(client);
    harness.ping(socketOf(socketId));
    expect(await harness.next('pong')).toEqual({ type: 'pong' });
  });

  it('stops on 4001 (unknown app) with the error, and reconnects at once after 4200', async () => {
    const stranger = connect({ key: 'no-such-key' });
    const errors: unknown[] = [];
    stranger.connection.bind('error', (error: unknown) => errors.push(error));
    await onEvent((cb) => stranger.connection.bind('disconnected', cb));
    expect(errors).toEqual([
      {
        type: 'WebSocketError',
        error: { type: 'PusherError', data: { code: 4001, message: 'Application does not exist' } },
      },
    ]);
    // A 4000–4099 code is final: pusher-js stays disconnected instead of retrying.
    expect(stranger.connection.state).toBe('disconnected');

    const client = connect();
    const first = await connected(client);
    const reconnected = new Promise<string>((resolve) =>
      client.connection.bind('state_change', ({ current }: { current: string }) => {
        if (current === 'connected') resolve(client.connection.socket_id);
      }),
    );
    harness.refuse(socketOf(first), PUSHER_ERRORS.RECONNECT);
    const second = await reconnected;
    expect(second).not.toBe(first);
  });
});

describe('Laravel Echo 2 (pusher broadcaster) against the protocol modules', () => {
  it('listens on a public channel, whispers on a private one and tracks a presence channel', async () => {
    const adaClient = connect({ user: { id: '1', info: { name: 'Ada' } } });
    const bobClient = connect({ user: { id: '2', info: { name: 'Bob' } } });
    const ada = new Echo({ broadcaster: 'pusher', key: app.key, client: adaClient });
    const bob = new Echo({ broadcaster: 'pusher', key: app.key, client: bobClient });

    const shipped = new Promise<unknown>((resolve) => ada.channel('orders').listen('.OrderShipped', resolve));
    await onEvent((cb) => ada.channel('orders').subscribed(cb));
    harness.broadcast('orders', channelEvent('orders', 'OrderShipped', '{"order":{"id":5}}'));
    expect(await shipped).toEqual({ order: { id: 5 } });

    await expectEchoWhisperAndPresence(ada, bob);
  });
});
