import Pusher from 'pusher';
import {
  DEFAULT_IDENTITY_LIMITS,
  authorizeSubscription,
  classifyChannel,
  clientEventProblem,
  parseChannelData,
  parseUserData,
  verifyChannelAuth,
  verifyUserAuth,
} from '../../src/protocols/pusher';

const app = { appId: 'app-1', key: 'app-key', secret: 'app-secret' };
const sdk = new Pusher({
  ...app,
  host: '127.0.0.1',
  encryptionMasterKeyBase64: Buffer.alloc(32, 7).toString('base64'),
});
const socketId = '1234.5678';

describe('channel authorization signed by the pusher SDK (authorizeChannel)', () => {
  it('accepts a private channel and refuses another socket, channel, key or secret', () => {
    const { auth } = sdk.authorizeChannel(socketId, 'private-orders');
    expect(verifyChannelAuth(app, { socketId, channel: 'private-orders', auth })).toEqual({
      ok: true,
      value: undefined,
    });
    expect(verifyChannelAuth(app, { socketId: '1234.5679', channel: 'private-orders', auth })).toMatchObject({
      ok: false,
      message: expect.stringContaining('Invalid signature'),
    });
    expect(verifyChannelAuth(app, { socketId, channel: 'private-other', auth })).toMatchObject({ ok: false });
    expect(
      verifyChannelAuth({ ...app, secret: 'other' }, { socketId, channel: 'private-orders', auth }),
    ).toMatchObject({ ok: false });
    expect(
      verifyChannelAuth({ ...app, key: 'other' }, { socketId, channel: 'private-orders', auth }),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining('Invalid key'),
    });
    const flipped = auth.slice(0, -1) + (auth.endsWith('0') ? '1' : '0');
    expect(verifyChannelAuth(app, { socketId, channel: 'private-orders', auth: flipped })).toMatchObject({
      ok: false,
    });
    expect(
      verifyChannelAuth(app, { socketId, channel: 'private-orders', auth: 'x'.repeat(600) }),
    ).toMatchObject({
      ok: false,
    });
    expect(verifyChannelAuth(app, { socketId, channel: 'private-orders', auth: undefined })).toMatchObject({
      ok: false,
    });
  });

  it('accepts a presence channel over its exact channel_data and parses the member', () => {
    const signed = sdk.authorizeChannel(socketId, 'presence-room', {
      user_id: 'u1',
      user_info: { name: 'Ada' },
    });
    const request = {
      channel: classifyChannel('presence-room'),
      auth: signed.auth,
      channelData: signed.channel_data,
    };
    expect(authorizeSubscription(app, socketId, request)).toEqual({
      ok: true,
      member: { userId: 'u1', userInfo: { name: 'Ada' } },
    });
    // The same member data written differently is not what was signed.
    const rewritten = { ...request, channelData: '{"user_info":{"name":"Ada"},"user_id":"u1"}' };
    expect(authorizeSubscription(app, socketId, rewritten)).toMatchObject({
      ok: false,
      refusal: { type: 'AuthError', status: 401 },
    });
    expect(authorizeSubscription(app, socketId, { ...request, channelData: undefined })).toMatchObject({
      ok: false,
    });
  });

  it('keeps a numeric user_id (as Laravel sends) as its decimal string', () => {
    // The SDK's types want a string id; Laravel's broadcaster signs an integer.
    const signed = sdk.authorizeChannel(socketId, 'presence-room', { user_id: 42 as unknown as string });
    const check = authorizeSubscription(app, socketId, {
      channel: classifyChannel('presence-room'),
      auth: signed.auth,
      channelData: signed.channel_data,
    });
    expect(check).toEqual({ ok: true, member: { userId: '42' } });
  });

  it('accepts an encrypted channel signed like a private one', () => {
    const signed = sdk.authorizeChannel(socketId, 'private-encrypted-vault');
    expect(signed.shared_secret).toBeDefined();
    expect(
      authorizeSubscription(app, socketId, {
        channel: classifyChannel('private-encrypted-vault'),
        auth: signed.auth,
      }),
    ).toEqual({ ok: true });
    expect(
      authorizeSubscription(app, socketId, { channel: classifyChannel('private-encrypted-vault') }),
    ).toMatchObject({ ok: false, refusal: { error: expect.stringContaining('requires auth') } });
  });

  it('lets public channels through and server-to-user channels only to their signed-in user', () => {
    expect(authorizeSubscription(app, socketId, { channel: classifyChannel('cache-scores') })).toEqual({
      ok: true,
    });
    const own = classifyChannel('#server-to-user-u1');
    expect(authorizeSubscription(app, socketId, { channel: own }, 'u1')).toEqual({ ok: true });
    expect(authorizeSubscription(app, socketId, { channel: own }, 'u2')).toMatchObject({
      ok: false,
      refusal: { status: 403 },
    });
    expect(authorizeSubscription(app, socketId, { channel: own })).toMatchObject({ ok: false });
  });
});

describe('channel_data bounds', () => {
  it('requires user_id and bounds user_info and the text', () => {
    expect(parseChannelData('{"user_info":{}}')).toMatchObject({
      ok: false,
      message: expect.stringContaining('user_id'),
    });
    expect(parseChannelData('{"user_id":""}')).toMatchObject({ ok: false });
    expect(parseChannelData('{"user_id":1.5}')).toMatchObject({ ok: false });
    expect(parseChannelData('{"user_id":true}')).toMatchObject({ ok: false });
    expect(parseChannelData(`{"user_id":"${'a'.repeat(129)}"}`)).toMatchObject({ ok: false });
    expect(parseChannelData('[1]')).toMatchObject({
      ok: false,
      message: 'channel_data must be a JSON object',
    });
    expect(parseChannelData('{')).toMatchObject({ ok: false, message: 'channel_data is not valid JSON' });
    const big = JSON.stringify({
      user_id: 'u',
      user_info: { bio: 'x'.repeat(DEFAULT_IDENTITY_LIMITS.maxUserInfoBytes) },
    });
    expect(parseChannelData(big)).toMatchObject({
      ok: false,
      message: expect.stringContaining('user_info is'),
    });
    const huge = JSON.stringify({
      user_id: 'u',
      pad: 'x'.repeat(DEFAULT_IDENTITY_LIMITS.maxChannelDataBytes),
    });
    expect(parseChannelData(huge)).toMatchObject({
      ok: false,
      message: expect.stringContaining('channel_data is'),
    });
  });
});

describe('user sign-in signed by the pusher SDK (authenticateUser)', () => {
  it('accepts the signature over socket_id::user::user_data and parses the user and watchlist', () => {
    const signed = sdk.authenticateUser(socketId, {
      id: 'u1',
      user_info: { name: 'Ada' },
      watchlist: ['u2', 'u3', 'u2'],
    });
    expect(verifyUserAuth(app, { socketId, auth: signed.auth, userData: signed.user_data })).toMatchObject({
      ok: true,
    });
    expect(parseUserData(signed.user_data)).toEqual({
      ok: true,
      value: { id: 'u1', watchlist: ['u2', 'u3'], userData: signed.user_data },
    });
    expect(
      verifyUserAuth(app, { socketId: '1.2', auth: signed.auth, userData: signed.user_data }),
    ).toMatchObject({
      ok: false,
    });
    expect(
      verifyUserAuth(app, { socketId, auth: signed.auth, userData: signed.user_data.replace('u1', 'u9') }),
    ).toMatchObject({ ok: false });
    // A channel signature is not a sign-in signature.
    const channelAuth = sdk.authorizeChannel(socketId, 'private-x').auth;
    expect(verifyUserAuth(app, { socketId, auth: channelAuth, userData: signed.user_data })).toMatchObject({
      ok: false,
    });
  });

  it('requires a string id and bounds the watchlist', () => {
    expect(parseUserData('{"id":7}')).toMatchObject({
      ok: false,
      message: expect.stringContaining('user_data.id'),
    });
    expect(parseUserData('{"name":"x"}')).toMatchObject({ ok: false });
    expect(parseUserData('{"id":"u","watchlist":"u2"}')).toMatchObject({ ok: false });
    const many = JSON.stringify({ id: 'u', watchlist: Array.from({ length: 101 }, (_, i) => `w${i}`) });
    expect(parseUserData(many)).toMatchObject({
      ok: false,
      message: expect.stringContaining('limit is 100'),
    });
  });
});

describe('client events', () => {
  it('are allowed on subscribed private and presence channels only, when the app allows them', () => {
    expect(clientEventProblem(classifyChannel('private-a'), true, true)).toBeUndefined();
    expect(clientEventProblem(classifyChannel('presence-cache-a'), true, true)).toBeUndefined();
    expect(clientEventProblem(classifyChannel('public-a'), true, true)).toContain('private and presence');
    expect(clientEventProblem(classifyChannel('private-encrypted-a'), true, true)).toContain('encrypted');
    expect(clientEventProblem(classifyChannel('private-a'), false, true)).toContain('not subscribed');
    expect(clientEventProblem(classifyChannel('private-a'), true, false)).toContain('disabled');
  });
});
