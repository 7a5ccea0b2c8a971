/**
 * @switchboard/client against a real gateway (memory engine): the API of docs/client.md, one V4
 * socket for every channel, reconnects and terminal closes.
 */
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { SignJWT } from 'jose';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { SwitchboardError } from '../src';
import type { ConnectionState, Member } from '../src';
import {
  closeClients,
  newClient,
  nextEvent,
  nextPublication,
  RecordingWebSocket,
  refusingClient,
} from './support/helpers';
import { waitFor } from '@switchboard/harness';

let node: TestGateway;
let key: ApiKeyRecord;

beforeAll(async () => {
  // A low per-connection message rate: flooding a socket is how tests make the server close it
  // with a reconnectable code (4029) on demand.
  node = await startGateway({ memoryState: createMemoryState(), env: { CLIENT_MESSAGES_PER_SECOND: '20' } });
  key = await createTestKey(node.engine);
});

afterEach(() => closeClients());
afterAll(() => node.close());

const url = (): string => `ws://127.0.0.1:${node.port}`;
const publish = (channel: string, message: unknown, version = 'v4'): Promise<unknown> =>
  postJson(`${node.httpUrl}/api/${version === 'v4' ? 'v4/' : ''}publish`, {
    key: key.key,
    secret: key.secret,
    channel,
    message,
  });
const socketsOf = (uuid: string): RecordingWebSocket[] =>
  RecordingWebSocket.opened.filter((socket) => socket.query.get('uuid') === uuid);

/** Floods `socket`'s channel past the rate limit: the server closes it with 4029 (reconnectable). */
function flood(socket: RecordingWebSocket): void {
  for (let i = 0; i <= 20; i++) socket.send(JSON.stringify({ event: 'flood', data: i }));
}

describe('channels on one V4 socket', () => {
  it('carries every channel on one socket: the first is the primary (URL), the others are subscribed', async () => {
    const sb = newClient({ url: url(), apiKey: key.key });
    const states: ConnectionState[] = [];
    sb.on('state', (state) => states.push(state));
    const news = sb.channel('news');
    const sport = sb.channel('sport');
    const weather = sb.channel('weather');
    await Promise.all([news.ready(), sport.ready(), weather.ready()]);
    expect(states).toEqual(['connecting', 'connected']);
    expect(sb.state).toBe('connected');

    const sockets = socketsOf(sb.uuid);
    expect(sockets).toHaveLength(1);
    expect(new URL(sockets[0]!.url).pathname).toBe('/v4/news');
    expect(news.isPrimary).toBe(true);
    expect(sport.isPrimary).toBe(false);

    // API publishes reach the primary (unstamped) and the secondaries (stamped), each to its handle.
    const onNews = nextPublication(news, 'headline');
    const onSport = nextPublication(sport, 'score');
    const everything: string[] = [];
    weather.on('*', (event, data) => everything.push(`${event}:${JSON.stringify(data)}`));
    const onWeather = nextPublication(weather, 'forecast');
    await publish('news', { event: 'headline', data: { title: 'Hello' }, meta: { by: 7 } });
    await publish('sport', { event: 'score', data: '2-1' });
    await publish('weather', { event: 'forecast', data: 'sun' });
    expect(await onNews).toMatchObject({ data: { title: 'Hello' }, meta: { by: 7 } });
    expect((await onSport).data).toBe('2-1');
    expect((await onSport).publication.text).toBe('{"event":"score","data":"2-1"}');
    await onWeather;
    expect(everything).toEqual(['forecast:"sun"']);
    // The same name returns the same handle.
    expect(sb.channel('sport')).toBe(sport);
  });

  it('publishes between clients on primary and secondary channels, not back to the sender unless notifySelf', async () => {
    const alice = newClient({ url: url(), apiKey: key.key, user: 'alice' });
    const bob = newClient({ url: url(), apiKey: key.key, user: 'bob', notifySelf: true });
    const aliceLobby = alice.channel('lobby');
    const aliceChat = alice.channel('chat');
    const bobChat = bob.channel('chat');
    const bobLobby = bob.channel('lobby');
    await Promise.all([aliceLobby.ready(), aliceChat.ready(), bobChat.ready(), bobLobby.ready()]);

    const echo = jest.fn();
    aliceChat.on('msg', echo);
    const atBob = nextPublication(bobChat, 'msg');
    await aliceChat.publish('msg', { text: 'hi' }, { from: 'alice' });
    expect(await atBob).toMatchObject({ data: { text: 'hi' }, meta: { from: 'alice' } });

    // Bob has notifySelf: his own message comes back to him, and reaches Alice's primary.
    const bobEcho = nextPublication(bobLobby, 'wave');
    const atAlice = nextPublication(aliceLobby, 'wave');
    await bobLobby.publish('wave', 1);
    await Promise.all([bobEcho, atAlice]);
    // A later message from Alice reached Bob; her first one never came back to her.
    const marker = nextPublication(bobChat, 'marker');
    await aliceChat.publish('marker', null);
    await marker;
    expect(echo).not.toHaveBeenCalled();
  });

  it('queues publishes made before the channel is subscribed, and sends them in order', async () => {
    const watcher = newClient({ url: url(), apiKey: key.key });
    const room = watcher.channel('queued');
    await room.ready();
    const seen: unknown[] = [];
    room.on('n', (data) => seen.push(data));
    const sender = newClient({ url: url(), apiKey: key.key });
    const early = sender.channel('queued');
    expect(early.state).toBe('pending');
    const sent = [1, 2, 3].map((n) => early.publish('n', n));
    await Promise.all(sent);
    await waitFor('three messages', () => seen.length === 3, 5000);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('sends direct messages with sendTo: only the target user gets them', async () => {
    const alice = newClient({ url: url(), apiKey: key.key, user: 'alice' });
    const bob = newClient({ url: url(), apiKey: key.key, user: 'bob' });
    const carol = newClient({ url: url(), apiKey: key.key, user: 'carol' });
    const rooms = ['dm-lobby', 'dm-room'];
    const [, aliceRoom] = rooms.map((name) => alice.channel(name));
    const [, bobRoom] = rooms.map((name) => bob.channel(name));
    const carolRoom = carol.channel('dm-room');
    await Promise.all([aliceRoom!.ready(), bobRoom!.ready(), carolRoom.ready()]);
    const atCarol = jest.fn();
    carolRoom.on('psst', atCarol);
    const atBob = nextPublication(bobRoom!, 'psst');
    await aliceRoom!.sendTo('bob', 'psst', { text: 'secret' }, { from: 'alice' });
    expect(await atBob).toMatchObject({ data: { text: 'secret' }, meta: { from: 'alice' } });
    const marker = nextPublication(carolRoom, 'marker');
    await aliceRoom!.publish('marker', null);
    await marker;
    expect(atCarol).not.toHaveBeenCalled();
  });

  it('keeps the member list from presence events, deduplicated by identity; members() asks the server', async () => {
    const mira = newClient({ url: url(), apiKey: key.key, user: 'mira' });
    const miraLobby = mira.channel('p-home');
    const miraRoom = mira.channel('p-room', { presence: true });
    await Promise.all([miraLobby.ready(), miraRoom.ready()]);
    await waitFor("mira's own member_list", () => miraRoom.members.length === 1, 5000);
    expect(miraRoom.members).toEqual([{ uuid: mira.uuid, user: 'mira' }]);

    const joined = nextEvent<[Member, readonly Member[]]>(miraRoom, 'member_joined', (m) => m.user === 'kai');
    const kai = newClient({ url: url(), apiKey: key.key, user: 'kai' });
    const kaiRoom = kai.channel('p-room', { presence: true });
    const [member, members] = await joined;
    expect(member).toEqual({ uuid: kai.uuid, user: 'kai' });
    expect(members.map((m) => m.user).sort()).toEqual(['kai', 'mira']);
    expect(await kaiRoom.fetchMembers()).toHaveLength(2);
    expect(await miraLobby.fetchMembers()).toEqual([]);

    // Kai's second device: the same identity, so nobody sees a join and the list stays at two.
    const kai2 = newClient({ url: url(), apiKey: key.key, user: 'kai' });
    await kai2.channel('p-room', { presence: true }).ready();
    const left = nextEvent<[Member, readonly Member[]]>(miraRoom, 'member_left');
    kai.close();
    kai2.close();
    const [gone, after] = await left;
    expect(gone.user).toBe('kai');
    expect(after).toEqual([{ uuid: mira.uuid, user: 'mira' }]);
    expect(miraRoom.members).toEqual(after);
  });

  it('sends binary on the primary and receives it as bytes; a secondary refuses binary', async () => {
    const alice = newClient({ url: url(), apiKey: key.key });
    const bob = newClient({ url: url(), apiKey: key.key });
    const aliceBin = alice.channel('bin');
    const aliceOther = alice.channel('bin-other');
    const bobOther = bob.channel('bin-home');
    const bobBin = bob.channel('bin');
    await Promise.all([aliceBin.ready(), aliceOther.ready(), bobOther.ready(), bobBin.ready()]);
    const got = nextEvent<[Uint8Array]>(bobBin, 'binary');
    const echo = jest.fn();
    aliceBin.on('binary', echo);
    await aliceBin.sendBinary(new Uint8Array([0, 1, 2, 250, 255]));
    const [bytes] = await got;
    expect([...bytes]).toEqual([0, 1, 2, 250, 255]);
    // Alice's socket gets its own frame back (recovery asks for notify_self); the client drops it.
    const marker = nextPublication(aliceBin, 'marker');
    await publish('bin', { event: 'marker', data: 0 });
    await marker;
    expect(echo).not.toHaveBeenCalled();
    await expect(aliceOther.sendBinary(new Uint8Array([1]))).rejects.toMatchObject({ kind: 'state' });
  });

  it('moves the socket to another channel when the primary is left, and the others keep receiving', async () => {
    const sb = newClient({ url: url(), apiKey: key.key });
    const first = sb.channel('move-a');
    const second = sb.channel('move-b');
    const third = sb.channel('move-c');
    await Promise.all([first.ready(), second.ready(), third.ready()]);
    first.leave();
    expect(first.state).toBe('left');
    await Promise.all([second.ready(), third.ready()]);
    const sockets = socketsOf(sb.uuid);
    expect(sockets.map((socket) => new URL(socket.url).pathname)).toEqual(['/v4/move-a', '/v4/move-b']);
    expect(await sockets[0]!.closeEvent).toMatchObject({ code: 1000 });
    expect(second.isPrimary).toBe(true);
    const onSecond = nextPublication(second, 'e');
    const onThird = nextPublication(third, 'e');
    await publish('move-b', { event: 'e', data: 2 });
    await publish('move-c', { event: 'e', data: 3 });
    expect((await onSecond).data).toBe(2);
    expect((await onThird).data).toBe(3);
    // Leaving a secondary unsubscribes it on the same socket.
    third.leave();
    const gone = jest.fn();
    third.on('e', gone);
    await expect(third.publish('e', 1)).rejects.toBeInstanceOf(SwitchboardError);
    const marker = nextPublication(second, 'marker');
    await publish('move-c', { event: 'e', data: 4 });
    await publish('move-b', { event: 'marker', data: 0 });
    await marker;
    expect(gone).not.toHaveBeenCalled();
    expect(socketsOf(sb.uuid)).toHaveLength(2);
    // Leaving the last channel closes the socket: nothing left to carry.
    second.leave();
    await waitFor('idle', () => sb.state === 'idle', 5000);
  });

  it('close() ends every channel and the socket at once, opening nothing more', async () => {
    const sb = newClient({ url: url(), apiKey: key.key });
    const rooms = ['cl-1', 'cl-2', 'cl-3'].map((name) => sb.channel(name));
    await Promise.all(rooms.map((room) => room.ready()));
    const states: ConnectionState[] = [];
    sb.on('state', (state) => states.push(state));
    const [socket] = socketsOf(sb.uuid);
    sb.close();
    expect(states).toEqual(['closed']);
    expect(rooms.map((room) => room.state)).toEqual(['left', 'left', 'left']);
    expect((await socket!.closeEvent).code).toBe(1000);
    await expect(rooms[1]!.publish('x', 1)).rejects.toMatchObject({ kind: 'state' });
    expect(socketsOf(sb.uuid)).toHaveLength(1);
    expect(() => sb.channel('cl-4')).toThrow(SwitchboardError);
  });

  it('closes cleanly while its socket is still connecting (a host that never answers the upgrade)', async () => {
    // It accepts and never reads; its accepted sockets are destroyed at the end, or they would
    // keep the test process alive after the client has gone.
    const accepted: Socket[] = [];
    const silent = createServer((socket) => void accepted.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const sb = newClient({
        url: `ws://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        apiKey: key.key,
      });
      const room = sb.channel('never');
      sb.channel('never-2');
      await waitFor('a socket', () => socketsOf(sb.uuid).length === 1, 5000);
      expect(sb.state).toBe('connecting');
      // Leaving the primary moves the socket: the connecting one is abandoned, a new one starts.
      room.leave();
      await waitFor('the moved socket', () => socketsOf(sb.uuid).length === 2, 5000);
      sb.close();
      expect(sb.state).toBe('closed');
      await socketsOf(sb.uuid)[1]!.closeEvent;
    } finally {
      for (const socket of accepted) socket.destroy();
      silent.close();
    }
  });

  it('delivers text that is not an {event, data} object to "text" handlers', async () => {
    const sb = newClient({ url: url(), apiKey: key.key });
    const room = sb.channel('texts');
    await room.ready();
    const got = nextEvent<[string]>(room, 'text');
    await publish('texts', 'plain words');
    expect((await got)[0]).toBe('plain words');
  });
});

describe('reconnecting', () => {
  it('reconnects after a reconnectable close (4029) with a delay, resubscribes every channel, states in order', async () => {
    const sb = newClient({ url: url(), apiKey: key.key, backoff: { baseMs: 200 } });
    const primary = sb.channel('re-a');
    const secondary = sb.channel('re-b', { presence: true });
    await Promise.all([primary.ready(), secondary.ready()]);
    const states: ConnectionState[] = [];
    sb.on('state', (state) => states.push(state));
    const [socket] = socketsOf(sb.uuid);
    flood(socket!);
    const closed = await socket!.closeEvent;
    expect(closed.code).toBe(4029);
    const closedAt = Date.now();
    await nextEvent(secondary, 'subscribed');
    expect(states).toEqual(['disconnected', 'connecting', 'connected']);
    expect(socketsOf(sb.uuid)).toHaveLength(2);
    // A server-requested reconnect starts at the second window, [0, 4 × base): no tight loop.
    expect(Date.now() - closedAt).toBeLessThan(4 * 200 + 1000);
    const onSecondary = nextPublication(secondary, 'back');
    await publish('re-b', { event: 'back', data: true });
    await onSecondary;
  });

  it('reconnects at once on the browser-style "online" event instead of waiting for its timer', async () => {
    const listeners: Array<() => void> = [];
    const g = globalThis as { addEventListener?: unknown; removeEventListener?: unknown };
    // Node has no window events; the client listens through globalThis like in a browser.
    g.addEventListener = (type: string, listener: () => void) =>
      type === 'online' && listeners.push(listener);
    g.removeEventListener = () => undefined;
    try {
      const sb = newClient({ url: url(), apiKey: key.key, backoff: { baseMs: 60_000, capMs: 60_000 } });
      const room = sb.channel('online');
      await room.ready();
      const [socket] = socketsOf(sb.uuid);
      flood(socket!);
      await waitFor('disconnected', () => sb.state === 'disconnected', 5000);
      for (const listener of listeners) listener();
      await nextEvent(room, 'subscribed');
      expect(sb.state).toBe('connected');
    } finally {
      delete g.addEventListener;
      delete g.removeEventListener;
    }
  });

  it('stops on a terminal close and surfaces the reason: invalid key (4501)', async () => {
    const sb = newClient({ url: url(), apiKey: 'no-such-key' });
    const room = sb.channel('denied');
    const errors = nextEvent<[SwitchboardError]>(sb, 'error');
    const channelError = nextEvent<[SwitchboardError]>(room, 'error');
    const [error] = await errors;
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({ kind: 'closed', code: 4501, reason: 'Invalid API key' });
    expect((await channelError)[0]).toBe(error);
    expect(sb.state).toBe('failed');
    expect(room.state).toBe('failed');
    await expect(room.publish('x', 1)).rejects.toMatchObject({ kind: 'state' });
    // No second socket: the client does not retry a terminal close.
    const opened = RecordingWebSocket.opened.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(RecordingWebSocket.opened.length).toBe(opened);
  });

  it("stops when kicked (4509) with the administrator's reason", async () => {
    const sb = newClient({ url: url(), apiKey: key.key, user: 'kickme' });
    await sb.channel('kick-room').ready();
    const errors = nextEvent<[SwitchboardError]>(sb, 'error');
    await postJson(`${node.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      user: 'kickme',
      reason: 'Bye now',
    });
    expect((await errors)[0]).toMatchObject({ kind: 'closed', code: 4509, reason: 'Bye now' });
    expect(sb.state).toBe('failed');
  });

  it('a partial kick removes only that channel, with a "kicked" error on it', async () => {
    const sb = newClient({ url: url(), apiKey: key.key, user: 'partial' });
    const home = sb.channel('pk-home');
    const side = sb.channel('pk-side');
    await Promise.all([home.ready(), side.ready()]);
    const error = nextEvent<[SwitchboardError]>(side, 'error');
    await postJson(`${node.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      user: 'partial',
      channel: 'pk-side',
      reason: 'Not here',
    });
    expect((await error)[0]).toMatchObject({ kind: 'kicked', reason: 'Not here', channel: 'pk-side' });
    expect(side.state).toBe('failed');
    expect(sb.state).toBe('connected');
    const onHome = nextPublication(home, 'still');
    await publish('pk-home', { event: 'still', data: 1 });
    await onHome;
  });
});

describe('frame errors', () => {
  it.each([4, 3] as const)(
    'protocol %i: a refused frame is an error on its channel, and the socket stays open',
    async (protocol) => {
      const { sb, room, side } = await refusingClient(node.engine, {
        url: url(),
        protocol,
        home: 'fe-home',
        side: 'fe-side',
      });
      const error = nextEvent<[SwitchboardError]>(room, 'error');
      // The publish rejects with the refusal too (packages/client/test/publish.test.ts).
      await expect(room.publish('x', 1)).rejects.toBeInstanceOf(SwitchboardError);
      expect((await error)[0]).toMatchObject({
        kind: 'frame',
        reason: 'Client messages are disabled for this API key',
        channel: 'fe-home',
      });
      expect(sb.state).toBe('connected');
      expect([room.state, side.state]).toEqual(['subscribed', 'subscribed']);
    },
  );
});

describe('private channels', () => {
  const sign = (channel: string, user: string, exp: number): Promise<string> =>
    new SignJWT({ user })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(channel)
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(key.secret));

  it('asks getToken on every (re)subscribe, so a token that expired is replaced on reconnect', async () => {
    const now = Math.floor(Date.now() / 1000);
    // The first tokens are past their expiry by 1 s, so the server's 5-second leeway keeps them valid
    // for 4 s more (room for a loaded machine to connect); later ones expire in an hour.
    const issued: Array<{ channel: string; token: string }> = [];
    const getToken = async (channel: string): Promise<string> => {
      const first = !issued.some((entry) => entry.channel === channel);
      const token = await sign(channel, 'pat', first ? now - 1 : now + 3600);
      issued.push({ channel, token });
      return token;
    };
    const sb = newClient({ url: url(), apiKey: key.key, getToken });
    const primary = sb.channel('private-tok-a');
    const secondary = sb.channel('private-tok-b');
    const open = sb.channel('tok-open');
    await Promise.all([primary.ready(), secondary.ready(), open.ready()]);
    expect(issued.map((entry) => entry.channel).sort()).toEqual(['private-tok-a', 'private-tok-b']);
    const [socket] = socketsOf(sb.uuid);
    expect(socket!.query.get('jwt')).toBe(issued[0]!.token);

    // Wait until the first tokens are past the leeway: reusing them now would be refused.
    const firstToken = issued.find((entry) => entry.channel === 'private-tok-b')!.token;
    await waitFor('token expiry', () => Date.now() / 1000 > now + 5, 8000);
    const stale = await connectClient(node.wsUrl('/v4/private-tok-b', { api_key: key.key, jwt: firstToken }));
    expect(await stale.closed).toMatchObject({ code: 4504 });

    flood(socket!);
    await Promise.all([nextEvent(primary, 'subscribed'), nextEvent(secondary, 'subscribed')]);
    expect(issued).toHaveLength(4);
    const [, again] = socketsOf(sb.uuid);
    expect(again!.query.get('jwt')).toBe(
      issued.find((e, i) => i >= 2 && e.channel === 'private-tok-a')!.token,
    );
    const onSecondary = nextPublication(secondary, 'secret');
    await publish('private-tok-b', { event: 'secret', data: 42 });
    expect((await onSecondary).data).toBe(42);
  });

  it("a refused secondary subscribe fails that channel only, with the server's text", async () => {
    const sb = newClient({ url: url(), apiKey: key.key, getToken: () => 'not-a-jwt' });
    const open = sb.channel('ref-open');
    const guarded = sb.channel('private-ref');
    const error = nextEvent<[SwitchboardError]>(guarded, 'error');
    await open.ready();
    expect((await error)[0]).toMatchObject({
      kind: 'subscribe',
      channel: 'private-ref',
      reason: 'Authentication failed, provide valid jwt token.',
    });
    await expect(guarded.ready()).rejects.toMatchObject({ kind: 'subscribe' });
    expect(sb.state).toBe('connected');
  });
});

describe('V3 (protocol: 3)', () => {
  it('opens one socket per channel, keeps full rosters, relays binary frames', async () => {
    const a = newClient({ url: url(), apiKey: key.key, protocol: 3, user: 'v3a' });
    const b = newClient({ url: url(), apiKey: key.key, protocol: 3, user: 'v3b' });
    const aRoom = a.channel('v3-room', { presence: true });
    a.channel('v3-other');
    await aRoom.ready();
    const joined = nextEvent<[Member, readonly Member[]]>(aRoom, 'member_joined', (m) => m.user === 'v3b');
    const bRoom = b.channel('v3-room', { presence: true });
    const [, members] = await joined;
    expect(members.map((m) => m.user).sort()).toEqual(['v3a', 'v3b']);
    expect(
      socketsOf(a.uuid)
        .map((s) => new URL(s.url).pathname)
        .sort(),
    ).toEqual(['/v3/v3-other', '/v3/v3-room']);
    const onA = nextPublication(aRoom, 'v3');
    await publish('v3-room', { event: 'v3', data: 'yes' }, 'v3');
    expect((await onA).data).toBe('yes');
    await bRoom.ready();
    const bytes = nextEvent<[Uint8Array]>(aRoom, 'binary');
    await bRoom.sendBinary(new Uint8Array([9, 8, 7]));
    expect([...(await bytes)[0]]).toEqual([9, 8, 7]);
  });
});
