import { useGateway } from './support/fixture';
import { connectClient, createTestKey, postJson } from '@switchboard/testing';
import type { TestClient } from '@switchboard/testing';
import { SignJWT } from 'jose';

const fx = useGateway();
const { open } = fx;

const subscribe = async (
  client: TestClient,
  data: Record<string, unknown>,
): Promise<Record<string, unknown>> => {
  client.send({ event: 'system::subscribe', data });
  const reply = await client.next((f) =>
    /^system::subscribe_(success|error)$/.test(String(f.json?.['event'])),
  );
  return reply.json!;
};

const sign = (channel: string, claims: Record<string, unknown> = {}): Promise<string> =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(channel)
    .sign(new TextEncoder().encode(fx.key.secret));

describe('V4 multiplexing', () => {
  it('acknowledges a subscribe, then stamps frames of the secondary and leaves the primary unchanged', async () => {
    const alice = await open('/v4/lobby');
    expect(await subscribe(alice, { channel: 'room-2', uuid: 'u-a2' })).toEqual({
      event: 'system::subscribe_success',
      data: { channel: 'room-2' },
    });
    const bob = await open('/v4/room-2');
    bob.send('{"event":"chat","data":"yo"}');
    expect((await alice.next()).text).toBe('{"event":"chat","data":"yo","system::channel":"room-2"}');
    const carol = await open('/v4/lobby');
    carol.send('{"event":"hello","data":1}');
    expect((await alice.next()).text).toBe('{"event":"hello","data":1}');
  });

  it('routes a client frame by system::channel and delivers it untagged to primary subscribers', async () => {
    const alice = await open('/v4/home-a');
    await subscribe(alice, { channel: 'shared' });
    const bob = await open('/v4/shared');
    const carol = await open('/v4/home-c');
    await subscribe(carol, { channel: 'shared' });
    alice.send({ event: 'chat', data: 'yo', 'system::channel': 'shared' });
    expect((await bob.next()).text).toBe('{"event":"chat","data":"yo"}');
    expect((await carol.next()).text).toBe('{"event":"chat","data":"yo","system::channel":"shared"}');
  });

  it('refuses a frame for a channel the socket is not subscribed to', async () => {
    const alice = await open('/v4/solo');
    alice.send({ event: 'chat', data: 1, 'system::channel': 'elsewhere' });
    expect((await alice.nextEvent('system::error')).json?.['data']).toEqual({
      error: 'Not subscribed to channel "elsewhere"',
    });
  });

  it('unsubscribes, and refuses to unsubscribe the primary or an unknown channel', async () => {
    const alice = await open('/v4/base');
    await subscribe(alice, { channel: 'extra' });
    alice.send({ event: 'system::unsubscribe', data: { channel: 'extra' } });
    expect((await alice.nextEvent('system::unsubscribe_success')).json?.['data']).toEqual({
      channel: 'extra',
    });
    const bob = await open('/v4/extra');
    bob.send('after');
    await alice.expectSilence((f) => f.text.includes('after'));
    alice.send({ event: 'system::unsubscribe', data: { channel: 'base' } });
    expect((await alice.nextEvent('system::unsubscribe_error')).json?.['data']).toMatchObject({
      channel: 'base',
    });
    alice.send({ event: 'system::unsubscribe', data: { channel: 'never' } });
    expect((await alice.nextEvent('system::unsubscribe_error')).json?.['data']).toEqual({
      channel: 'never',
      error: 'Not subscribed to channel never',
    });
  });

  it('needs a JWT for private channels on subscribe, checking sub and signature', async () => {
    const alice = await open('/v4/pub');
    expect(await subscribe(alice, { channel: 'private-x' })).toEqual({
      event: 'system::subscribe_error',
      data: { channel: 'private-x', error: 'Authentication failed, provide valid jwt token.' },
    });
    expect((await subscribe(alice, { channel: 'private-x', jwt: await sign('private-y') }))['event']).toBe(
      'system::subscribe_error',
    );
    expect((await subscribe(alice, { channel: 'private-x', jwt: await sign('private-x') }))['event']).toBe(
      'system::subscribe_success',
    );
  });

  it('rejects invalid channel names and malformed subscribe data with a subscribe_error naming the problem', async () => {
    const alice = await open('/v4/names');
    const bad = await subscribe(alice, { channel: 'bad name!' });
    expect(bad).toMatchObject({ event: 'system::subscribe_error', data: { channel: 'bad name!' } });
    expect(String((bad['data'] as Record<string, unknown>)['error'])).toContain('Invalid channel name');
    alice.send({ event: 'system::subscribe', data: { channel: 42 } });
    expect((await alice.nextEvent('system::subscribe_error')).json?.['data']).toEqual({
      channel: '',
      error: 'data.channel is required (a string)',
    });
    alice.send({ event: 'system::teleport', data: {} });
    expect(
      String(((await alice.nextEvent('system::error')).json?.['data'] as Record<string, unknown>)['error']),
    ).toContain('Unknown control event');
  });

  it('sends presence deltas, with subscribe_success before the member list and one join per identity', async () => {
    const alice = await open('/v4/p-home', { user: 'alice' });
    expect(
      await subscribe(alice, { channel: 'p-room', presence: true, uuid: 'a1', user: 'alice' }),
    ).toMatchObject({ event: 'system::subscribe_success' });
    const list = await alice.nextEvent('system::member_list');
    expect(list.json).toEqual({
      event: 'system::member_list',
      data: { channel: 'p-room', members: [{ uuid: 'a1', user: 'alice' }], count: 1 },
      'system::channel': 'p-room',
    });
    // Like V3, the joiner gets its own member_joined too (after its member list).
    expect((await alice.nextEvent('system::member_joined')).json?.['data']).toMatchObject({
      member: { uuid: 'a1', user: 'alice' },
      count: 1,
    });
    const bob = await open('/v4/p-room', { presence: '1', user: 'bob', uuid: 'b1' });
    expect((await alice.nextEvent('system::member_joined')).json).toEqual({
      event: 'system::member_joined',
      data: { channel: 'p-room', member: { uuid: 'b1', user: 'bob' }, count: 2 },
      'system::channel': 'p-room',
    });
    const bobList = await bob.nextEvent('system::member_list');
    expect(bobList.json?.['system::channel']).toBeUndefined();
    expect((bobList.json?.['data'] as Record<string, unknown>)['count']).toBe(2);

    // A second connection of bob: no second join; its departure: no leave while one remains.
    const bob2 = await open('/v4/p-room', { presence: '1', user: 'bob', uuid: 'b2' });
    await bob2.nextEvent('system::member_list');
    await alice.expectSilence((f) => f.json?.['event'] === 'system::member_joined');
    bob2.close();
    await bob2.closed;
    await alice.expectSilence((f) => f.json?.['event'] === 'system::member_left');
    bob.close();
    expect((await alice.nextEvent('system::member_left')).json?.['data']).toEqual({
      channel: 'p-room',
      member: { uuid: 'b1', user: 'bob' },
      count: 1,
    });
  });

  it('answers get_members for subscribed channels and member_list_error otherwise', async () => {
    const alice = await open('/v4/gm', { presence: '1', user: 'alice', uuid: 'a' });
    await alice.nextEvent('system::member_list');
    alice.send({ event: 'system::get_members', data: { channel: 'gm' } });
    expect((await alice.nextEvent('system::member_list')).json?.['data']).toEqual({
      channel: 'gm',
      members: [{ uuid: 'a', user: 'alice' }],
      count: 1,
    });
    alice.send({ event: 'system::get_members', data: { channel: 'other' } });
    expect((await alice.nextEvent('system::member_list_error')).json?.['data']).toEqual({
      channel: 'other',
      error: 'Not subscribed to channel other',
    });
  });

  it('delivers system::to direct messages only to the target user', async () => {
    const alice = await open('/v4/dm', { user: 'alice' });
    const bob = await open('/v4/dm', { user: 'bob' });
    const carol = await open('/v4/dm', { user: 'carol' });
    const dm =
      '{"event":"chat-message","data":{"text":"psst","dm":true},"meta":{"from":"alice"},"system::to":"bob"}';
    alice.send(dm);
    expect((await bob.next()).text).toBe(dm);
    await carol.expectSilence();
    await alice.expectSilence();
  });

  it('relays binary frames of the primary as system::binary with base64 data', async () => {
    const alice = await open('/v4/bin4');
    const bob = await open('/v4/bin4');
    alice.send(Buffer.from('hello'));
    expect((await bob.next()).json).toEqual({
      event: 'system::binary',
      data: Buffer.from('hello').toString('base64'),
    });
  });

  it('keeps V3 and V4 apart: publishes and client frames never cross versions', async () => {
    const v4 = await open('/v4/iso');
    const v3 = await connectClient(fx.node.wsUrl('/v3/iso', { api_key: fx.key.key }));
    fx.track(v3);
    await postJson(`${fx.node.httpUrl}/api/publish`, {
      key: fx.key.key,
      secret: fx.key.secret,
      channel: 'iso',
      message: 'for-v3',
    });
    await postJson(`${fx.node.httpUrl}/api/v4/publish`, {
      key: fx.key.key,
      secret: fx.key.secret,
      channel: 'iso',
      message: 'for-v4',
    });
    expect((await v3.next()).text).toBe('for-v3');
    expect((await v4.next()).text).toBe('for-v4');
    v3.send('v3-frame');
    await v4.expectSilence();
    await v3.expectSilence();
  });

  it('stamps API publishes for secondaries when the message is a JSON object, and not otherwise', async () => {
    const alice = await open('/v4/stamp-home');
    await subscribe(alice, { channel: 'stamp' });
    await postJson(`${fx.node.httpUrl}/api/v4/publish`, {
      key: fx.key.key,
      secret: fx.key.secret,
      channel: 'stamp',
      message: { event: 'e' },
    });
    expect((await alice.next()).text).toBe('{"event":"e","system::channel":"stamp"}');
    await postJson(`${fx.node.httpUrl}/api/v4/publish`, {
      key: fx.key.key,
      secret: fx.key.secret,
      channel: 'stamp',
      message: 'plain text',
    });
    expect((await alice.next()).text).toBe('plain text');
  });

  it('refuses client messages when the key disables them, with an error event', async () => {
    const quiet = await createTestKey(fx.node.engine, { clientMessages: false });
    const alice = await connectClient(fx.node.wsUrl('/v4/q', { api_key: quiet.key }));
    fx.track(alice);
    alice.send('{"event":"x"}');
    expect((await alice.nextEvent('system::error')).json?.['data']).toEqual({
      error: 'Client messages are disabled for this API key',
    });
  });
});
