/**
 * Compatibility with the real PieSocket SDKs (docs/protocol.md, docs/openapi.yaml):
 * - `piesocket-js@5.1.0`, the v3 browser client, from npm, driven through its public API;
 * - `piesocket-nodejs@1.1.0`, the server SDK, publishing with `channelId`;
 * - V4 frames exactly as the v4 SDKs send them and as docs/protocol.md shows the replies, with raw
 *   `ws` clients (no v4 JavaScript SDK is published on npm).
 */
import { readFileSync } from 'node:fs';
import axios from 'axios';
import type { AxiosRequestConfig } from 'axios';
import { SignJWT } from 'jose';
import WebSocket from 'ws';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { Received, TestClient, TestGateway } from '@switchboard/testing';

// ---------------------------------------------------------------------------------------------
// piesocket-js@5.1.0
// ---------------------------------------------------------------------------------------------

interface SdkMember {
  uuid: string;
  user?: unknown;
}

/** The parts of piesocket-js 5.1.0's `Channel` the tests use (see its src/Channel.js). */
interface SdkChannel {
  uuid: string | null;
  members: SdkMember[];
  shouldReconnect: boolean;
  connection: { readyState: number };
  listen(event: string, callback: (data: unknown, meta: unknown) => void): void;
  on(event: string, callback: (event: unknown) => void): void;
  publish(event: string, data: unknown, meta?: unknown): Promise<unknown>;
  getCurrentMember(): SdkMember | null;
}

interface SdkOptions {
  clusterDomain?: string;
  apiKey?: string;
  presence?: number;
  notifySelf?: number;
  userId?: string;
  jwt?: string;
}

interface SdkClient {
  options: Record<string, unknown>;
  subscribe(channelId: string): Promise<SdkChannel>;
  unsubscribe(channelId: string): boolean;
  getEndpoint(channelId: string, uuid: string): Promise<string>;
}

type SdkConstructor = new (options: SdkOptions) => SdkClient;

/**
 * The browser `WebSocket` the SDK gets: the `ws` package's client, plus a record of every socket
 * the SDK opens (frames and close, captured from construction on, so nothing races the test's
 * listeners). It changes nothing the SDK sees.
 */
class RecordingWebSocket extends WebSocket {
  static readonly instances: RecordingWebSocket[] = [];
  readonly frames: string[] = [];
  readonly closeEvent: Promise<{ code: number; reason: string }>;

  constructor(address: string) {
    super(address);
    RecordingWebSocket.instances.push(this);
    this.on('message', (data, isBinary) => {
      if (!isBinary) this.frames.push(String(data));
    });
    this.closeEvent = new Promise((resolve) =>
      this.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }
}

/**
 * piesocket-js is an ES module (`"type": "module"`), which jest's CommonJS runtime cannot load
 * from node_modules; its package also ships the browser build (`dist/piesocket.js`, the
 * `unpkg` entry: the same 5.1.0 sources bundled with its `uuid` dependency), which declares a
 * global `PieSocket` whose `default` is the client class. We evaluate that build unchanged, as
 * a `<script>` tag would, in this test's global scope.
 *
 * Like in a browser it uses the global `WebSocket` (captured when the bundle is evaluated, in
 * src/misc/WebSocket.js), so the `ws` package's client is installed there first.
 */
function loadPieSocketJs(): SdkConstructor {
  (globalThis as { WebSocket?: unknown }).WebSocket = RecordingWebSocket;
  const source = readFileSync(require.resolve('piesocket-js/dist/piesocket.js'), 'utf8');
  const bundle = new Function(`${source};\nreturn PieSocket;`)() as { default: SdkConstructor };
  return bundle.default;
}

/** The socket the SDK opened for a channel (its latest one). */
function socketOf(channel: SdkChannel): RecordingWebSocket {
  const socket = channel.connection as unknown;
  if (!(socket instanceof RecordingWebSocket)) throw new Error('the SDK did not use the global WebSocket');
  return socket;
}

/**
 * piesocket-js 5.1.0 hard-codes the scheme: `getEndpoint` builds
 * `wss://${clusterDomain}/v3/${channel}?api_key=…&notify_self=…&source=jssdk&v=5.0.8&presence=…[&jwt=…][&user=…]&uuid=…`
 * (the `ssl` option only arrived in 5.2.0), and the test gateway speaks plain `ws://`. The
 * narrowest honest workaround: keep the SDK's own endpoint builder (every query parameter as it
 * sends them, unencoded) and swap only the scheme, on this instance. The built URLs are recorded
 * so tests can check them.
 */
function plainTextEndpoints(sdk: SdkClient, built: string[]): void {
  const original = sdk.getEndpoint.bind(sdk);
  sdk.getEndpoint = async (channelId, uuid) => {
    const endpoint = await original(channelId, uuid);
    built.push(endpoint);
    if (!endpoint.startsWith('wss://')) throw new Error(`unexpected endpoint ${endpoint}`);
    return `ws://${endpoint.slice('wss://'.length)}`;
  };
}

// ---------------------------------------------------------------------------------------------
// piesocket-nodejs@1.1.0
// ---------------------------------------------------------------------------------------------

interface ServerSdk {
  publish(
    channel: string,
    event: string,
    data: unknown,
    meta?: unknown,
  ): Promise<{ status: number; data: unknown }>;
}
type ServerSdkConstructor = new (options: { clusterId: string; apiKey: string; secret: string }) => ServerSdk;
// piesocket-nodejs ships no types; it uses the shared `axios` module instance imported above.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const PieSocketServer = require('piesocket-nodejs') as ServerSdkConstructor;

/**
 * piesocket-nodejs 1.1.0 has no host, port or protocol option: `publish` always POSTs to
 * `https://<clusterId>.piesocket.com/api/publish?src=piesocket-nodejs&v=<version>` through the
 * default axios instance. The narrowest honest interception is an axios request interceptor
 * that rewrites only the origin of exactly that URL to the test gateway (plain http), keeping
 * path, query, headers and body as the SDK built them. Installed for the suite, ejected after.
 */
function routeServerSdkTo(clusterId: string, httpUrl: string, seen: AxiosRequestConfig[]): () => void {
  const origin = `https://${clusterId}.piesocket.com/`;
  const id = axios.interceptors.request.use((config) => {
    if (config.url?.startsWith(origin)) {
      seen.push({ ...config });
      return { ...config, url: `${httpUrl}/${config.url.slice(origin.length)}` };
    }
    return config;
  });
  return () => axios.interceptors.request.eject(id);
}

// ---------------------------------------------------------------------------------------------

/** Resolves with the first call of a piesocket-js listener whose data matches, or fails after 5 s. */
function nextSdkEvent(
  channel: SdkChannel,
  event: string,
  match: (data: Record<string, unknown>) => boolean = () => true,
): Promise<{ data: Record<string, unknown>; meta: unknown }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within 5 s`)), 5000);
    channel.listen(event, (data, meta) => {
      const record = data as Record<string, unknown>;
      if (!match(record)) return;
      clearTimeout(timer);
      resolve({ data: record, meta });
    });
  });
}

let node: TestGateway;
let key: ApiKeyRecord;
let PieSocket: SdkConstructor;
const endpoints: string[] = [];
const sdkRequests: AxiosRequestConfig[] = [];
let ejectInterceptor: () => void;
const sdks: Array<{ sdk: SdkClient; channels: string[] }> = [];
const rawClients: TestClient[] = [];

function newSdk(options: SdkOptions = {}): SdkClient {
  const sdk = new PieSocket({ clusterDomain: `127.0.0.1:${node.port}`, apiKey: key.key, ...options });
  plainTextEndpoints(sdk, endpoints);
  sdks.push({ sdk, channels: [] });
  return sdk;
}

async function sdkSubscribe(sdk: SdkClient, channelId: string): Promise<SdkChannel> {
  sdks.find((entry) => entry.sdk === sdk)?.channels.push(channelId);
  return sdk.subscribe(channelId);
}

beforeAll(async () => {
  PieSocket = loadPieSocketJs();
  node = await startGateway({ memoryState: createMemoryState() });
  key = await createTestKey(node.engine);
  ejectInterceptor = routeServerSdkTo('switchboard-test', node.httpUrl, sdkRequests);
});

afterEach(() => {
  for (const { sdk, channels } of sdks.splice(0)) for (const channel of channels) sdk.unsubscribe(channel);
  for (const client of rawClients.splice(0)) client.close();
});

afterAll(async () => {
  ejectInterceptor();
  await node.close();
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
});

describe('piesocket-js 5.1.0 (v3 browser SDK) with piesocket-nodejs 1.1.0 (server SDK)', () => {
  it('connects with the URL the SDK builds and receives a publish sent by the server SDK with channelId', async () => {
    const sdk = newSdk();
    const channel = await sdkSubscribe(sdk, 'sdk-news');
    const endpoint = endpoints.at(-1)!;
    expect(endpoint).toMatch(
      new RegExp(
        `^wss://127\\.0\\.0\\.1:${node.port}/v3/sdk-news\\?api_key=${key.key}&notify_self=0&source=jssdk&v=5\\.0\\.8&presence=0&uuid=[0-9a-f-]{36}$`,
      ),
    );
    expect(channel.uuid).toBe(endpoint.slice(endpoint.indexOf('&uuid=') + 6));

    const received = nextSdkEvent(channel, 'new-post');
    const server = new PieSocketServer({
      clusterId: 'switchboard-test',
      apiKey: key.key,
      secret: key.secret,
    });
    const response = await server.publish(
      'sdk-news',
      'new-post',
      { title: 'Hello', tags: ['a', 'b'] },
      { author: 7 },
    );
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ success: true, offset: 1, epoch: expect.any(String) });
    // What the SDK sent: its own URL and body, `channelId` rather than `channel`.
    const request = sdkRequests.at(-1)!;
    expect(request.url).toBe('https://switchboard-test.piesocket.com/api/publish?src=piesocket-nodejs&v=3');
    expect(request.method).toBe('post');
    expect(request.data).toEqual({
      key: key.key,
      secret: key.secret,
      channelId: 'sdk-news',
      message: { event: 'new-post', data: { title: 'Hello', tags: ['a', 'b'] }, meta: { author: 7 } },
    });

    const { data, meta } = await received;
    expect(data).toEqual({ title: 'Hello', tags: ['a', 'b'] });
    expect(meta).toEqual({ author: 7 });
  });

  it('surfaces a rejected server-SDK publish as a rejected promise with the JSON error body', async () => {
    const server = new PieSocketServer({
      clusterId: 'switchboard-test',
      apiKey: key.key,
      secret: 'wrong-secret',
    });
    await expect(server.publish('sdk-news', 'e', {})).rejects.toMatchObject({
      response: { status: 401, data: { success: false, error: 'Unknown API key or wrong secret' } },
    });
  });

  it('relays SDK publishes between browsers, not back to the sender (notify_self defaults to 0)', async () => {
    const alice = await sdkSubscribe(newSdk(), 'sdk-chat');
    const bob = await sdkSubscribe(newSdk(), 'sdk-chat');
    const got = nextSdkEvent(bob, 'chat');
    const echo = jest.fn();
    alice.listen('chat', echo);
    await alice.publish('chat', { text: 'hi' }, { from: 'alice' });
    expect(await got).toEqual({ data: { text: 'hi' }, meta: { from: 'alice' } });
    // Alice's socket gets nothing back: a frame she sends after that reaches Bob first and alone.
    const marker = nextSdkEvent(bob, 'marker');
    await alice.publish('marker', 1);
    await marker;
    expect(echo).not.toHaveBeenCalled();
  });

  it('echoes to the sender with notifySelf: 1', async () => {
    const alice = await sdkSubscribe(newSdk({ notifySelf: 1 }), 'sdk-echo');
    expect(endpoints.at(-1)).toContain('&notify_self=1&');
    const got = nextSdkEvent(alice, 'ping');
    await alice.publish('ping', 'me');
    expect((await got).data).toBe('me');
  });

  it('sees presence through its listener API: member_joined and member_left with member and members; its roster handshake', async () => {
    // Users chosen so that "most recently active first" and the tie-break (identity ascending)
    // give the same order: the roster order is then exact whatever the clock does.
    const mira = newSdk({ presence: 1, userId: 'mira' });
    const miraChannel = await sdkSubscribe(mira, 'sdk-lobby');
    expect(endpoints.at(-1)).toMatch(/&presence=1&user=mira&uuid=/);
    const miraUuid = miraChannel.uuid!;

    const joined = nextSdkEvent(
      miraChannel,
      'system:member_joined',
      (data) => (data['member'] as SdkMember).user === 'kai',
    );
    const kai = newSdk({ presence: 1, userId: 'kai' });
    const kaiChannel = await sdkSubscribe(kai, 'sdk-lobby');
    const kaiUuid = kaiChannel.uuid!;

    const { data } = await joined;
    expect(data).toEqual({
      member: { uuid: kaiUuid, user: 'kai' },
      members: [
        { uuid: kaiUuid, user: 'kai' },
        { uuid: miraUuid, user: 'mira' },
      ],
    });
    // The SDK's member handshake keeps its roster from `members`.
    expect(miraChannel.members).toEqual(data['members']);

    // Kai's own system:member_list and system:member_joined may arrive before his listeners
    // could be attached (they follow the socket's open at once); the SDK's handshake still
    // applied them, which the roster and getCurrentMember() (the SDK looks itself up by the
    // uuid it sent in the URL) show once a later frame came through.
    const later = nextSdkEvent(kaiChannel, 'after-join');
    await miraChannel.publish('after-join', null);
    await later;
    expect(kaiChannel.members).toEqual([
      { uuid: kaiUuid, user: 'kai' },
      { uuid: miraUuid, user: 'mira' },
    ]);
    expect(kaiChannel.getCurrentMember()).toEqual({ uuid: kaiUuid, user: 'kai' });

    const left = nextSdkEvent(miraChannel, 'system:member_left');
    kai.unsubscribe('sdk-lobby');
    expect((await left).data).toEqual({
      member: { uuid: kaiUuid, user: 'kai' },
      members: [{ uuid: miraUuid, user: 'mira' }],
    });
    expect(miraChannel.members).toEqual([{ uuid: miraUuid, user: 'mira' }]);
  });

  it('passes a raw JSON userId through unencoded, and the member user is that text', async () => {
    const watcher = await sdkSubscribe(newSdk({ presence: 1, userId: 'watcher' }), 'sdk-json-user');
    const joined = nextSdkEvent(
      watcher,
      'system:member_joined',
      (data) => (data['member'] as SdkMember).user !== 'watcher',
    );
    await sdkSubscribe(newSdk({ presence: 1, userId: '{"name":"Zoë","id":3}' }), 'sdk-json-user');
    expect(endpoints.at(-1)).toContain('&user={"name":"Zoë","id":3}&uuid=');
    const member = (await joined).data['member'] as SdkMember;
    expect(member.user).toBe('{"name":"Zoë","id":3}');
    expect(JSON.parse(member.user as string)).toEqual({ name: 'Zoë', id: 3 });
  });

  it('joins a private channel with the jwt option; a JWT user claim keeps its JSON type', async () => {
    const jwt = await new SignJWT({ user: { id: 42, role: 'editor' } })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('private-sdk-room')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(key.secret));
    const sdk = newSdk({ presence: 1, userId: 'ignored-when-the-jwt-has-user', jwt });
    const channel = await sdkSubscribe(sdk, 'private-sdk-room');
    expect(endpoints.at(-1)).toContain(`&jwt=${jwt}&user=`);
    const got = nextSdkEvent(channel, 'hello');
    await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'private-sdk-room',
      message: { event: 'hello', data: 1 },
    });
    await got;
    expect(channel.getCurrentMember()).toEqual({ uuid: channel.uuid, user: { id: 42, role: 'editor' } });
  });

  it('stops reconnecting after the error frame that precedes a terminal close (bad key)', async () => {
    const sdk = new PieSocket({ clusterDomain: `127.0.0.1:${node.port}`, apiKey: 'no-such-key' });
    plainTextEndpoints(sdk, endpoints);
    const channel = await sdk.subscribe('sdk-denied');
    const socket = socketOf(channel);
    const opened = RecordingWebSocket.instances.length;
    expect(await socket.closeEvent).toEqual({ code: 4501, reason: 'Invalid API key' });
    expect(socket.frames).toEqual(['{"error":"Invalid API key"}']);
    // The SDK's onClose (→ reconnect()) has run: the error frame had turned reconnecting off.
    expect(channel.shouldReconnect).toBe(false);
    expect(channel.connection).toBe(socket);
    expect(RecordingWebSocket.instances.length).toBe(opened);
  });

  it('stops reconnecting when kicked: error frame with the reason, then close 4509', async () => {
    const channel = await sdkSubscribe(newSdk(), 'sdk-kicked');
    const socket = socketOf(channel);
    const opened = RecordingWebSocket.instances.length;
    const kick = await postJson(`${node.httpUrl}/api/kick`, {
      key: key.key,
      secret: key.secret,
      reason: 'Bye for now',
    });
    expect(kick.status).toBe(200);
    expect(await socket.closeEvent).toEqual({ code: 4509, reason: 'Bye for now' });
    expect(socket.frames).toEqual(['{"error":"Bye for now"}']);
    expect(channel.shouldReconnect).toBe(false);
    expect(channel.connection).toBe(socket);
    expect(RecordingWebSocket.instances.length).toBe(opened);
  });

  it('reconnects at once after a reconnectable close without an error frame (why terminal closes need one)', async () => {
    const channel = await sdkSubscribe(newSdk(), 'sdk-restart');
    const socket = socketOf(channel);
    const opened = RecordingWebSocket.instances.length;
    // Over the per-connection rate (100 frames per second by default): 4029, reconnectable, so
    // no error frame (docs/errors.md).
    for (let i = 0; i <= node.config.limits.clientMessagesPerSecond; i++) await channel.publish('flood', i);
    const closed = await socket.closeEvent;
    expect(closed.code).toBe(4029);
    expect(socket.frames).toEqual([]);
    expect(channel.shouldReconnect).toBe(true);
    const again = RecordingWebSocket.instances[opened]!;
    expect(again.url).toBe(socket.url);
    expect(channel.connection).toBe(again);
    await new Promise((resolve) => again.once('open', resolve));
    expect(RecordingWebSocket.instances.length).toBe(opened + 1);
  });
});

// ---------------------------------------------------------------------------------------------
// V4, frames exactly as docs/protocol.md shows them
// ---------------------------------------------------------------------------------------------

describe('V4 frames as the v4 SDKs send and expect them', () => {
  /** A v4 SDK socket: the same query string as v3 (docs/protocol.md, "SDKs"), on /v4/<primary>. */
  async function v4Socket(
    primary: string,
    params: { user?: string; uuid: string; presence?: boolean; notifySelf?: boolean },
  ) {
    const query: Record<string, string> = {
      api_key: key.key,
      notify_self: params.notifySelf ? '1' : '0',
      source: 'jssdk',
      v: '7.2.0',
      presence: params.presence ? '1' : '0',
    };
    if (params.user !== undefined) query['user'] = params.user;
    query['uuid'] = params.uuid;
    const client = await connectClient(node.wsUrl(`/v4/${primary}`, query));
    rawClients.push(client);
    return client;
  }

  const text = async (client: TestClient, match?: (frame: Received) => boolean): Promise<string> =>
    (await client.next(match)).text;

  it('primary presence, secondary subscribe with its own uuid, stamping, deltas, DMs, binary, get_members, unsubscribe', async () => {
    // Bob opens the socket on room-1 (primary, presence on).
    const bob = await v4Socket('v4-room-1', { user: 'bob', uuid: 'bob-primary', presence: true });
    expect(await text(bob)).toBe(
      '{"event":"system::member_list","data":{"channel":"v4-room-1","members":[{"uuid":"bob-primary","user":"bob"}],"count":1}}',
    );
    expect(await text(bob)).toBe(
      '{"event":"system::member_joined","data":{"channel":"v4-room-1","member":{"uuid":"bob-primary","user":"bob"},"count":1}}',
    );

    // Alice opens hers on a lobby without presence: no acknowledgement, no frame at all.
    const alice = await v4Socket('v4-lobby', { user: 'alice', uuid: 'alice-lobby' });
    // …and subscribes to room-1 as the SDKs do: presence boolean, a fresh uuid.
    alice.send(
      '{"event":"system::subscribe","data":{"channel":"v4-room-1","presence":true,"uuid":"alice-room-1","user":"alice"}}',
    );
    // subscribe_success (never stamped) comes before that channel's member list (stamped).
    expect(await text(alice)).toBe('{"event":"system::subscribe_success","data":{"channel":"v4-room-1"}}');
    expect(await text(alice)).toBe(
      '{"event":"system::member_list","data":{"channel":"v4-room-1","members":[{"uuid":"alice-room-1","user":"alice"},{"uuid":"bob-primary","user":"bob"}],"count":2},"system::channel":"v4-room-1"}',
    );
    expect(await text(alice)).toBe(
      '{"event":"system::member_joined","data":{"channel":"v4-room-1","member":{"uuid":"alice-room-1","user":"alice"},"count":2},"system::channel":"v4-room-1"}',
    );
    // Bob, on his primary, gets the same delta unstamped.
    expect(await text(bob)).toBe(
      '{"event":"system::member_joined","data":{"channel":"v4-room-1","member":{"uuid":"alice-room-1","user":"alice"},"count":2}}',
    );

    // A primary-channel frame goes out unchanged to primaries, stamped to secondaries.
    bob.send('{"event":"chat","data":"hi","meta":{"from":"bob"}}');
    expect(await text(alice)).toBe(
      '{"event":"chat","data":"hi","meta":{"from":"bob"},"system::channel":"v4-room-1"}',
    );
    // A secondary-channel frame carries the tag; Bob's primary copy has none.
    alice.send('{"event":"chat","data":"yo","system::channel":"v4-room-1"}');
    expect(await text(bob)).toBe('{"event":"chat","data":"yo"}');

    // Direct message: only the channel's connections whose user matches.
    const carol = await v4Socket('v4-room-1', { user: 'carol', uuid: 'carol-primary' });
    alice.send(
      '{"event":"chat-message","data":{"text":"psst","dm":true},"meta":{"from":"alice"},"system::to":"bob","system::channel":"v4-room-1"}',
    );
    expect(await text(bob)).toBe(
      '{"event":"chat-message","data":{"text":"psst","dm":true},"meta":{"from":"alice"},"system::to":"bob"}',
    );
    bob.send('{"event":"after-dm","data":1}');
    // Carol (not the target) sees the next broadcast but never the DM.
    expect(await text(carol)).toBe('{"event":"after-dm","data":1}');
    expect(carol.received.map((frame) => frame.text)).toEqual(['{"event":"after-dm","data":1}']);
    expect(await text(alice)).toBe('{"event":"after-dm","data":1,"system::channel":"v4-room-1"}');

    // Binary from the client belongs to its primary and reaches V4 sockets as system::binary.
    bob.send(Buffer.from('hello'));
    expect(await text(carol)).toBe('{"event":"system::binary","data":"aGVsbG8="}');
    expect(await text(alice)).toBe(
      '{"event":"system::binary","data":"aGVsbG8=","system::channel":"v4-room-1"}',
    );

    // get_members answers with the member list, stamped for a secondary, unstamped for the primary.
    alice.send('{"event":"system::get_members","data":{"channel":"v4-room-1"}}');
    expect(await text(alice)).toBe(
      '{"event":"system::member_list","data":{"channel":"v4-room-1","members":[{"uuid":"alice-room-1","user":"alice"},{"uuid":"bob-primary","user":"bob"}],"count":2},"system::channel":"v4-room-1"}',
    );
    bob.send('{"event":"system::get_members","data":{"channel":"v4-room-1"}}');
    expect(await text(bob)).toBe(
      '{"event":"system::member_list","data":{"channel":"v4-room-1","members":[{"uuid":"alice-room-1","user":"alice"},{"uuid":"bob-primary","user":"bob"}],"count":2}}',
    );

    // Unsubscribe: the reply, then member_left to the channel.
    alice.send('{"event":"system::unsubscribe","data":{"channel":"v4-room-1"}}');
    expect(await text(alice)).toBe('{"event":"system::unsubscribe_success","data":{"channel":"v4-room-1"}}');
    expect(await text(bob)).toBe(
      '{"event":"system::member_left","data":{"channel":"v4-room-1","member":{"uuid":"alice-room-1","user":"alice"},"count":1}}',
    );
    // Alice no longer receives room-1.
    bob.send('{"event":"gone","data":null}');
    // Carol (no presence of her own) gets the channel's member events too.
    expect(await text(carol)).toBe(
      '{"event":"system::member_left","data":{"channel":"v4-room-1","member":{"uuid":"alice-room-1","user":"alice"},"count":1}}',
    );
    expect(await text(carol)).toBe('{"event":"gone","data":null}');
    alice.send('{"event":"system::get_members","data":{"channel":"v4-lobby"}}');
    expect(await text(alice)).toBe(
      '{"event":"system::member_list","data":{"channel":"v4-lobby","members":[],"count":0}}',
    );
    expect(alice.received.some((frame) => frame.text.includes('"gone"'))).toBe(false);
  });

  it('answers with the _error replies (unstamped), as the SDKs intercept them', async () => {
    const client = await v4Socket('v4-errors', { user: 'dan', uuid: 'dan-1' });
    client.send(
      '{"event":"system::subscribe","data":{"channel":"private-v4","presence":false,"uuid":"dan-2"}}',
    );
    expect(await text(client)).toBe(
      '{"event":"system::subscribe_error","data":{"channel":"private-v4","error":"Authentication failed, provide valid jwt token."}}',
    );
    client.send(
      '{"event":"system::subscribe","data":{"channel":"no spaces allowed","presence":false,"uuid":"dan-3"}}',
    );
    expect(await text(client)).toBe(
      '{"event":"system::subscribe_error","data":{"channel":"no spaces allowed","error":"Invalid channel name: use 1 to 128 characters of A-Z a-z 0-9 _ - . = @ , ;"}}',
    );
    client.send('{"event":"system::unsubscribe","data":{"channel":"v4-never"}}');
    expect(await text(client)).toBe(
      '{"event":"system::unsubscribe_error","data":{"channel":"v4-never","error":"Not subscribed to channel v4-never"}}',
    );
    client.send('{"event":"system::get_members","data":{"channel":"v4-never"}}');
    expect(await text(client)).toBe(
      '{"event":"system::member_list_error","data":{"channel":"v4-never","error":"Not subscribed to channel v4-never"}}',
    );
  });

  it('subscribes a private secondary with data.jwt, and takes the JWT user claim', async () => {
    const jwt = await new SignJWT({ user: 7 })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('private-v4-ok')
      .sign(new TextEncoder().encode(key.secret));
    const client = await v4Socket('v4-auth-lobby', { user: 'erin', uuid: 'erin-1' });
    client.send(
      JSON.stringify({
        event: 'system::subscribe',
        data: { channel: 'private-v4-ok', presence: true, uuid: 'erin-2', jwt, user: 'erin' },
      }),
    );
    expect(await text(client)).toBe(
      '{"event":"system::subscribe_success","data":{"channel":"private-v4-ok"}}',
    );
    expect(await text(client)).toBe(
      '{"event":"system::member_list","data":{"channel":"private-v4-ok","members":[{"uuid":"erin-2","user":7}],"count":1},"system::channel":"private-v4-ok"}',
    );
  });

  it('deduplicates presence by identity: a second connection of the same user joins and leaves silently', async () => {
    const watcher = await v4Socket('v4-dedup', { user: 'watcher', uuid: 'w-1', presence: true });
    await watcher.nextEvent('system::member_joined');
    const first = await v4Socket('v4-dedup', { user: 'fay', uuid: 'fay-1', presence: true });
    expect(await text(watcher)).toBe(
      '{"event":"system::member_joined","data":{"channel":"v4-dedup","member":{"uuid":"fay-1","user":"fay"},"count":2}}',
    );
    const second = await v4Socket('v4-dedup', { user: 'fay', uuid: 'fay-2', presence: true });
    await second.nextEvent('system::member_list');
    second.close();
    await second.closed;
    first.close();
    expect(await text(watcher)).toBe(
      '{"event":"system::member_left","data":{"channel":"v4-dedup","member":{"uuid":"fay-1","user":"fay"},"count":1}}',
    );
    expect(watcher.received.map((frame) => frame.text).filter((t) => t.includes('fay-2'))).toEqual([]);
  });

  it('partial kick: a secondary gets system::kicked (stamped) and the socket stays; a primary kick closes with 4509', async () => {
    const client = await v4Socket('v4-kick-main', { user: 'gus', uuid: 'gus-1' });
    client.send(
      '{"event":"system::subscribe","data":{"channel":"v4-kick-side","presence":false,"uuid":"gus-2","user":"gus"}}',
    );
    await client.nextEvent('system::subscribe_success');
    const partial = await postJson(`${node.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      uuid: 'gus-2',
    });
    expect(partial.status).toBe(200);
    expect(await text(client)).toBe(
      '{"event":"system::kicked","data":{"channel":"v4-kick-side","reason":"Connection closed by administrator"},"system::channel":"v4-kick-side"}',
    );
    client.send('{"event":"system::get_members","data":{"channel":"v4-kick-side"}}');
    expect(await text(client)).toBe(
      '{"event":"system::member_list_error","data":{"channel":"v4-kick-side","error":"Not subscribed to channel v4-kick-side"}}',
    );
    await postJson(`${node.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      uuid: 'gus-1',
      reason: 'Account suspended',
    });
    expect(await text(client)).toBe('{"error":"Account suspended"}');
    expect(await client.closed).toEqual({ code: 4509, reason: 'Account suspended' });
  });

  it('V3 and V4 never cross: each publish path reaches only its own version', async () => {
    const v3 = await connectClient(node.wsUrl('/v3/v-cross', { api_key: key.key }));
    rawClients.push(v3);
    const v4 = await v4Socket('v-cross', { uuid: 'cross-1' });
    await postJson(`${node.httpUrl}/api/v4/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'v-cross',
      message: { event: 'four' },
    });
    await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'v-cross',
      message: { event: 'three' },
    });
    expect(await text(v4)).toBe('{"event":"four"}');
    expect(await text(v3)).toBe('{"event":"three"}');
    v3.send('{"event":"from-three"}');
    v4.send('{"event":"from-four"}');
    await v4.expectSilence();
    expect(v3.received.map((f) => f.text)).toEqual(['{"event":"three"}']);
    expect(v4.received.map((f) => f.text)).toEqual(['{"event":"four"}']);
  });
});
