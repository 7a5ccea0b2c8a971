/**
 * The PieSocket facade (`@switchboard/client/piesocket`) through the flows the gateway's SDK
 * compatibility suite runs with the real piesocket-js 5.1.0 (packages/gateway/test/sdk-compat.test.ts),
 * plus what the facade adds: backoff instead of an immediate reconnect, V4, the auth endpoint.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import PieSocket from '../src/piesocket';
import type { PieChannel, PieSocketOptions } from '../src/piesocket';
import { RecordingWebSocket } from './support/helpers';
import { waitFor } from '@switchboard/harness';

let node: TestGateway;
let key: ApiKeyRecord;
const sdks: Array<{ sdk: PieSocket; channels: string[] }> = [];

beforeAll(async () => {
  node = await startGateway({ memoryState: createMemoryState(), env: { CLIENT_MESSAGES_PER_SECOND: '20' } });
  key = await createTestKey(node.engine);
});

afterEach(() => {
  for (const { sdk, channels } of sdks.splice(0)) for (const channel of channels) sdk.unsubscribe(channel);
});

afterAll(() => node.close());

function newSdk(options: PieSocketOptions = {}): PieSocket {
  const sdk = new PieSocket({
    clusterDomain: `127.0.0.1:${node.port}`,
    ssl: false,
    apiKey: key.key,
    WebSocket: RecordingWebSocket,
    ...options,
  });
  sdks.push({ sdk, channels: [] });
  return sdk;
}

async function subscribe(sdk: PieSocket, channelId: string): Promise<PieChannel> {
  sdks.find((entry) => entry.sdk === sdk)?.channels.push(channelId);
  return sdk.subscribe(channelId);
}

const lastSocket = (): RecordingWebSocket => RecordingWebSocket.opened.at(-1)!;

/** The first call of a facade listener whose data matches. */
function nextListen(
  channel: PieChannel,
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

describe('PieSocket facade, V3 (piesocket-js 5.1.0 default)', () => {
  it('connects to /v3/<channel> with the SDK options and receives a V3 API publish', async () => {
    const channel = await subscribe(newSdk(), 'fa-news');
    const socket = lastSocket();
    expect(new URL(socket.url).pathname).toBe('/v3/fa-news');
    expect(socket.query.get('api_key')).toBe(key.key);
    expect(channel.uuid).toBe(socket.query.get('uuid'));
    const got = nextListen(channel, 'new-post');
    await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channelId: 'fa-news',
      message: { event: 'new-post', data: { title: 'Hello' }, meta: { author: 7 } },
    });
    expect(await got).toEqual({ data: { title: 'Hello' }, meta: { author: 7 } });
  });

  it('relays publishes between clients, not back to the sender (notifySelf defaults to 0); * gets (event, data, meta)', async () => {
    const alice = await subscribe(newSdk(), 'fa-chat');
    const bob = await subscribe(newSdk(), 'fa-chat');
    const got = nextListen(bob, 'chat');
    const all: unknown[] = [];
    bob.listen('*', ((event: string, data: unknown) => all.push([event, data])) as never);
    const echo = jest.fn();
    alice.listen('chat', echo);
    await alice.publish('chat', { text: 'hi' }, { from: 'alice' });
    expect(await got).toEqual({ data: { text: 'hi' }, meta: { from: 'alice' } });
    const marker = nextListen(bob, 'marker');
    await alice.publish('marker', 1);
    await marker;
    expect(echo).not.toHaveBeenCalled();
    expect(all).toEqual([
      ['chat', { text: 'hi' }],
      ['marker', 1],
    ]);
  });

  it('echoes to the sender with notifySelf: 1', async () => {
    const alice = await subscribe(newSdk({ notifySelf: 1 }), 'fa-echo');
    expect(lastSocket().query.get('notify_self')).toBe('1');
    const got = nextListen(alice, 'ping');
    await alice.publish('ping', 'me');
    expect((await got).data).toBe('me');
  });

  it('sees presence like piesocket-js: member events with member and members, the kept roster, getCurrentMember', async () => {
    const mira = await subscribe(newSdk({ presence: 1, userId: 'mira' }), 'fa-lobby');
    expect(lastSocket().query.get('presence')).toBe('1');
    const joined = nextListen(
      mira,
      'system:member_joined',
      (data) => (data['member'] as { user: string }).user === 'kai',
    );
    const kaiSdk = newSdk({ presence: 1, userId: 'kai' });
    const kai = await subscribe(kaiSdk, 'fa-lobby');
    const { data } = await joined;
    expect(data['member']).toEqual({ uuid: kai.uuid, user: 'kai' });
    expect((data['members'] as unknown[]).length).toBe(2);
    expect(mira.members).toEqual(data['members']);
    await waitFor("kai's roster", () => kai.members.length === 2, 5000);
    expect(kai.getCurrentMember()).toEqual({ uuid: kai.uuid, user: 'kai' });
    expect(mira.getMemberByUUID(kai.uuid)).toEqual({ uuid: kai.uuid, user: 'kai' });

    const left = nextListen(mira, 'system:member_left');
    expect(kaiSdk.unsubscribe('fa-lobby')).toBe(true);
    expect((await left).data).toEqual({
      member: { uuid: kai.uuid, user: 'kai' },
      members: [{ uuid: mira.uuid, user: 'mira' }],
    });
    expect(mira.members).toEqual([{ uuid: mira.uuid, user: 'mira' }]);
  });

  it('passes a raw JSON userId through, and the member user is that text', async () => {
    const watcher = await subscribe(newSdk({ presence: 1, userId: 'watcher' }), 'fa-json-user');
    const joined = nextListen(
      watcher,
      'system:member_joined',
      (data) => (data['member'] as { user: string }).user !== 'watcher',
    );
    await subscribe(newSdk({ presence: 1, userId: '{"name":"Zoë","id":3}' }), 'fa-json-user');
    const member = (await joined).data['member'] as { user: string };
    expect(member.user).toBe('{"name":"Zoë","id":3}');
  });

  it('joins a private channel with the jwt option; a JWT user claim keeps its JSON type', async () => {
    const jwt = await new SignJWT({ user: { id: 42, role: 'editor' } })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('private-fa-room')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(key.secret));
    const channel = await subscribe(newSdk({ presence: 1, userId: 'ignored', jwt }), 'private-fa-room');
    expect(lastSocket().query.get('jwt')).toBe(jwt);
    await waitFor('own member', () => channel.members.length === 1, 5000);
    expect(channel.getCurrentMember()).toEqual({ uuid: channel.uuid, user: { id: 42, role: 'editor' } });
  });

  it('fetches a private channel token from authEndpoint (form data channel_name) and answers {auth}', async () => {
    const requests: Array<{ type: string; body: string; header: string | undefined }> = [];
    const auth = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        requests.push({
          type: request.headers['content-type'] ?? '',
          body,
          header: request.headers['x-app'] as string,
        });
        void new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('private-fa-auth')
          .sign(new TextEncoder().encode(key.secret))
          .then((token) => response.end(JSON.stringify({ auth: token })));
      });
    });
    await new Promise<void>((resolve) => auth.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = auth.address() as AddressInfo;
      const sdk = newSdk({
        authEndpoint: `http://127.0.0.1:${port}/broadcasting/auth`,
        authHeaders: { 'x-app': 'yes' },
      });
      const channel = await subscribe(sdk, 'private-fa-auth');
      expect(channel.channel.state).toBe('subscribed');
      expect(requests).toHaveLength(1);
      expect(requests[0]!.type).toMatch(/^multipart\/form-data/);
      expect(requests[0]!.body).toMatch(/name="channel_name"\r\n\r\nprivate-fa-auth\r\n/);
      expect(requests[0]!.header).toBe('yes');
    } finally {
      auth.close();
    }
  });

  it('stops reconnecting after a terminal close (bad key), and reports it to on("error")', async () => {
    const sdk = newSdk({ apiKey: 'no-such-key' });
    const errors: unknown[] = [];
    // As piesocket-js: subscribe resolves on the socket's open; the error frame and close follow.
    const channel = await subscribe(sdk, 'fa-denied');
    channel.on('error', (error) => errors.push(error));
    const socket = lastSocket();
    expect(await socket.closeEvent).toEqual({ code: 4501, reason: 'Invalid API key' });
    await waitFor('the error', () => errors.length === 1, 5000);
    expect(errors[0]).toMatchObject({ kind: 'closed', code: 4501, reason: 'Invalid API key' });
    const opened = RecordingWebSocket.opened.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(RecordingWebSocket.opened.length).toBe(opened);
  });

  it('reconnects after a reconnectable close, with backoff instead of at once, and keeps listening', async () => {
    const channel = await subscribe(newSdk({ backoff: { baseMs: 150 } }), 'fa-restart');
    const socket = lastSocket();
    const opens: number[] = [];
    channel.on('open', () => opens.push(Date.now()));
    // Past the server's 20 frames per second (the client itself keeps to its pace: the socket).
    for (let i = 0; i <= 20; i++) socket.send(JSON.stringify({ event: 'flood', data: i }));
    expect((await socket.closeEvent).code).toBe(4029);
    await waitFor('reopen', () => opens.length === 1, 5000);
    const again = lastSocket();
    expect(again).not.toBe(socket);
    expect(new URL(again.url).pathname).toBe('/v3/fa-restart');
    const got = nextListen(channel, 'back');
    await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'fa-restart',
      message: { event: 'back', data: 1 },
    });
    await got;
  });
});

describe('PieSocket facade, version 4', () => {
  it('carries every channel on one /v4/ socket and routes listeners per channel', async () => {
    const sdk = newSdk({ version: 4 });
    const opened = RecordingWebSocket.opened.length;
    const one = await subscribe(sdk, 'fa4-one');
    const two = await subscribe(sdk, 'fa4-two');
    expect(RecordingWebSocket.opened.length).toBe(opened + 1);
    expect(new URL(lastSocket().url).pathname).toBe('/v4/fa4-one');
    const onOne = nextListen(one, 'e');
    const onTwo = nextListen(two, 'e');
    for (const channel of ['fa4-one', 'fa4-two'])
      await postJson(`${node.httpUrl}/api/v4/publish`, {
        key: key.key,
        secret: key.secret,
        channel,
        message: { event: 'e', data: channel },
      });
    expect((await onOne).data).toBe('fa4-one');
    expect((await onTwo).data).toBe('fa4-two');
  });
});
