import {
  AUTH_TIMESTAMP_WINDOW_SECONDS,
  type PusherHttpError,
  type SigningApp,
  authKeyOf,
  batchAnswer,
  eventsAnswer,
  isPusherHttpError,
  matchRoute,
  parseBatchBody,
  parseChannelQuery,
  parseChannelsQuery,
  parseEventBody,
  parseQuery,
  parseTerminateUser,
  parseUsersChannel,
  unknownAuthKey,
  verifySignedRequest,
} from '../../src/protocols/pusher';
import { APP, type CapturedRequest, type SdkHarness, startSdkHarness } from './sdk-requests';

const app: SigningApp = APP;
const limits = { maxBodyBytes: 65536, maxDataBytes: 10240 };

let sdk: SdkHarness;
beforeAll(async () => {
  sdk = await startSdkHarness();
});
afterAll(() => sdk.close());

function params(request: CapturedRequest): Map<string, string> {
  const parsed = parseQuery(request.query);
  if (!(parsed instanceof Map)) throw new Error(parsed.body);
  return parsed;
}

/** The verifier's answer to a captured request (undefined: accepted). */
function verify(
  request: CapturedRequest,
  options: { app?: SigningApp; nowMs?: number; body?: Buffer; query?: string; method?: string } = {},
): PusherHttpError | undefined {
  const route = matchRoute(options.method ?? request.method, request.path);
  if (isPusherHttpError(route)) return route;
  const query = parseQuery(options.query ?? request.query);
  if (!(query instanceof Map)) return query;
  return verifySignedRequest(
    {
      method: options.method ?? request.method,
      path: request.path,
      params: query,
      body: options.body ?? request.body,
    },
    options.app ?? app,
    route.appId,
    options.nowMs,
  );
}

describe('requests signed by the pusher server SDK', () => {
  it('accepts a trigger to one channel and reads its body', async () => {
    const request = await sdk.capture((p) => p.trigger('orders', 'OrderShipped', { id: 7 }));
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/apps/app-1/events');
    expect(authKeyOf(params(request))).toBe('app-key');
    expect(verify(request)).toBeUndefined();
    const event = parseEventBody(request.body, limits);
    if (isPusherHttpError(event)) throw new Error(event.body);
    expect(event.name).toBe('OrderShipped');
    expect(event.data).toBe('{"id":7}');
    expect(event.channels.map((c) => c.name)).toEqual(['orders']);
    expect(eventsAnswer(event, new Map())).toEqual({});
  });

  it('accepts a trigger to 100 channels with socket_id exclusion and info', async () => {
    const channels = Array.from({ length: 100 }, (_, i) => `presence-room-${i}`);
    const request = await sdk.capture((p) =>
      p.trigger(channels, 'tick', 'plain text', {
        socket_id: '123.456',
        info: 'user_count,subscription_count',
      }),
    );
    expect(verify(request)).toBeUndefined();
    const event = parseEventBody(request.body, limits);
    if (isPusherHttpError(event)) throw new Error(event.body);
    expect(event.channels).toHaveLength(100);
    expect(event.socketId).toBe('123.456');
    expect(event.data).toBe('plain text');
    const answer = eventsAnswer(
      event,
      new Map([['presence-room-0', { subscriptionCount: 3, userCount: 2 }]]),
    ) as {
      channels: Record<string, unknown>;
    };
    expect(answer.channels['presence-room-0']).toEqual({ user_count: 2, subscription_count: 3 });
    expect(answer.channels['presence-room-1']).toEqual({ user_count: 0, subscription_count: 0 });
  });

  it('accepts triggerBatch and answers info per event', async () => {
    const request = await sdk.capture((p) =>
      p.triggerBatch([
        { channel: 'a', name: 'one', data: { n: 1 } },
        { channel: 'presence-b', name: 'two', data: 'x', info: 'user_count' },
      ]),
    );
    expect(request.path).toBe('/apps/app-1/batch_events');
    expect(verify(request)).toBeUndefined();
    const events = parseBatchBody(request.body, limits);
    if (isPusherHttpError(events)) throw new Error(events.body);
    expect(events.map((e) => [e.channels[0]?.name, e.name, e.data])).toEqual([
      ['a', 'one', '{"n":1}'],
      ['presence-b', 'two', 'x'],
    ]);
    expect(batchAnswer(events, new Map([['presence-b', { subscriptionCount: 4, userCount: 3 }]]))).toEqual({
      batch: [{}, { user_count: 3 }],
    });
  });

  it('accepts the channel, channels and users queries and parses their parameters', async () => {
    const list = await sdk.capture((p) =>
      p.get({ path: '/channels', params: { filter_by_prefix: 'presence-', info: 'user_count' } }),
    );
    expect(list.method).toBe('GET');
    expect(verify(list)).toBeUndefined();
    const route = matchRoute(list.method, list.path);
    expect(route).toEqual({ name: 'channels', appId: 'app-1' });
    expect(parseChannelsQuery(params(list))).toEqual({
      prefix: 'presence-',
      userCount: true,
      subscriptionCount: false,
    });

    const one = await sdk.capture((p) =>
      p.get({ path: '/channels/presence-room', params: { info: 'user_count,subscription_count' } }),
    );
    expect(verify(one)).toBeUndefined();
    expect(matchRoute(one.method, one.path)).toEqual({
      name: 'channel',
      appId: 'app-1',
      channel: 'presence-room',
    });
    const query = parseChannelQuery('presence-room', params(one));
    expect(isPusherHttpError(query)).toBe(false);

    const users = await sdk.capture((p) => p.get({ path: '/channels/presence-room/users' }));
    expect(verify(users)).toBeUndefined();
    expect(matchRoute(users.method, users.path)).toEqual({
      name: 'channel_users',
      appId: 'app-1',
      channel: 'presence-room',
    });
    expect(parseUsersChannel('presence-room')).toMatchObject({ kind: 'presence' });
  });

  it('accepts terminateUserConnections and sendToUser', async () => {
    const terminate = await sdk.capture((p) => p.terminateUserConnections('user-9'));
    expect(verify(terminate)).toBeUndefined();
    const route = matchRoute(terminate.method, terminate.path);
    expect(route).toEqual({ name: 'terminate_user_connections', appId: 'app-1', userId: 'user-9' });
    expect(parseTerminateUser('user-9')).toBe('user-9');

    const send = await sdk.capture((p) => p.sendToUser('user-9', 'note', { hi: 1 }));
    expect(verify(send)).toBeUndefined();
    const event = parseEventBody(send.body, limits);
    if (isPusherHttpError(event)) throw new Error(event.body);
    expect(event.channels[0]).toMatchObject({
      name: '#server-to-user-user-9',
      kind: 'server-to-user',
      userId: 'user-9',
    });
  });

  it('refuses a tampered body, parameter, method or path with 401', async () => {
    const request = await sdk.capture((p) => p.trigger('orders', 'e', { id: 1 }));
    const tamperedBody = verify(request, { body: Buffer.from(request.body.toString().replace('1', '2')) });
    expect(tamperedBody).toMatchObject({ status: 401, body: expect.stringContaining('body_md5') });

    const tamperedQuery = verify(request, { query: `${request.query}&extra=1` });
    expect(tamperedQuery).toMatchObject({ status: 401, body: expect.stringContaining('Invalid signature') });

    const list = await sdk.capture((p) =>
      p.get({ path: '/channels', params: { filter_by_prefix: 'private-' } }),
    );
    const otherPrefix = verify(list, { query: list.query.replace('private-', 'presence-') });
    expect(otherPrefix).toMatchObject({ status: 401 });

    const withoutSignature = verify(request, {
      query: request.query.replace(/&?auth_signature=[0-9a-f]+/, ''),
    });
    expect(withoutSignature).toMatchObject({ status: 401, body: 'Missing auth_signature' });
  });

  it('refuses a stale or future timestamp (600 s window) and accepts one inside it', async () => {
    const request = await sdk.capture((p) => p.trigger('orders', 'e', 'x'));
    const signedAt = Number(params(request).get('auth_timestamp')) * 1000;
    const window = AUTH_TIMESTAMP_WINDOW_SECONDS * 1000;
    expect(verify(request, { nowMs: signedAt + window })).toBeUndefined();
    expect(verify(request, { nowMs: signedAt + window + 1000 })).toMatchObject({
      status: 401,
      body: expect.stringContaining('Timestamp expired'),
    });
    expect(verify(request, { nowMs: signedAt - window - 1000 })).toMatchObject({ status: 401 });
  });

  it('refuses a wrong secret, an unknown auth_key and a wrong auth_version with 401', async () => {
    const request = await sdk.capture((p) => p.trigger('orders', 'e', 'x'));
    expect(verify(request, { app: { ...app, secret: 'other-secret' } })).toMatchObject({
      status: 401,
      body: expect.stringContaining('Invalid signature'),
    });
    expect(verify(request, { app: { ...app, key: 'other-key' } })).toMatchObject({
      status: 401,
      body: 'Unknown auth_key',
    });
    expect(unknownAuthKey(params(request))).toEqual({ status: 401, body: 'Unknown auth_key' });
    expect(unknownAuthKey(new Map())).toEqual({ status: 401, body: 'Missing auth_key' });
    expect(
      verify(request, { query: request.query.replace('auth_version=1.0', 'auth_version=2.0') }),
    ).toMatchObject({
      status: 401,
      body: expect.stringContaining('auth_version'),
    });
  });

  it('answers 404 for an authentic request to another app id', async () => {
    const other = await startSdkHarness({ ...APP, appId: 'someone-else' });
    try {
      const request = await other.capture((p) => p.trigger('orders', 'e', 'x'));
      expect(verify(request)).toEqual({ status: 404, body: "Unknown app_id 'someone-else'" });
      // Not signed with the app's secret: the app id is never compared.
      expect(verify(request, { app: { ...app, secret: 'nope' } })).toMatchObject({ status: 401 });
    } finally {
      await other.close();
    }
  });

  it('answers 413 for a body or event data over the limits', async () => {
    const request = await sdk.capture((p) => p.trigger('orders', 'e', 'x'.repeat(2000)));
    expect(verify(request)).toBeUndefined();
    expect(parseEventBody(request.body, { maxBodyBytes: 1000, maxDataBytes: 10240 })).toMatchObject({
      status: 413,
      body: expect.stringContaining('Request body is'),
    });
    expect(parseEventBody(request.body, { maxBodyBytes: 65536, maxDataBytes: 1000 })).toMatchObject({
      status: 413,
      body: 'Event data is 2000 bytes; the limit is 1000',
    });
  });
});

describe('routes and queries', () => {
  it('answers 404 for unknown paths and 405 for a wrong method', () => {
    expect(matchRoute('GET', '/apps/1/nope')).toMatchObject({ status: 404 });
    expect(matchRoute('GET', '/other')).toMatchObject({ status: 404 });
    expect(matchRoute('GET', '/apps/1/events')).toEqual({
      status: 405,
      body: 'Method not allowed: use POST',
    });
    expect(matchRoute('POST', '/apps/1/channels')).toMatchObject({ status: 405 });
  });

  it('refuses a repeated or badly escaped query parameter', () => {
    expect(parseQuery('a=1&a=2')).toMatchObject({ status: 400 });
    expect(parseQuery('a=%E0%A4%A')).toMatchObject({ status: 400 });
    expect(parseQuery('info=user_count%2Csubscription_count&x=a+b')).toEqual(
      new Map([
        ['info', 'user_count,subscription_count'],
        ['x', 'a+b'],
      ]),
    );
  });
});
