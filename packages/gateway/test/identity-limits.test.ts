import { TestClient } from '@switchboard/testing';
import { SignJWT } from 'jose';
import { useGateway } from './support/fixture';

// Subscribing to a hundred channels takes more than the default 100 client frames per second.
const fx = useGateway({ CLIENT_MESSAGES_PER_SECOND: '1000' });
const { open } = fx;

const sign = (channel: string, user: unknown): Promise<string> =>
  new SignJWT({ user })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(channel)
    .sign(new TextEncoder().encode(fx.key.secret));

/** Connects and expects the terminal refusal: an error frame naming the problem, then 4514. */
async function expectRefused(path: string, query: Record<string, string>, error: string): Promise<void> {
  const client = fx.track(new TestClient(fx.node.wsUrl(path, { api_key: fx.key.key, ...query })));
  expect((await client.next()).json).toEqual({ error });
  expect(await client.closed).toEqual({ code: 4514, reason: error });
}

const UUID_ERROR = 'uuid is longer than 128 characters';
const USER_ERROR = 'user is longer than 256 bytes of JSON';

describe('uuid and user lengths at admission', () => {
  it('accepts a uuid of 128 characters and refuses 129 with 4514', async () => {
    const client = await open('/v3/presence-ids', { uuid: 'é'.repeat(128) });
    const list = await client.nextEvent('system:member_list');
    expect(list.json?.['data']).toEqual({ members: [{ uuid: 'é'.repeat(128) }] });
    await expectRefused('/v3/ids', { uuid: 'u'.repeat(129) }, UUID_ERROR);
    await expectRefused('/v4/ids', { uuid: 'é'.repeat(129) }, UUID_ERROR);
  });

  it('accepts a user of 256 bytes of JSON and refuses 257', async () => {
    // 127 two-byte characters and the quotes of its JSON string: 256 bytes.
    const client = await open('/v3/presence-users', { user: 'é'.repeat(127) });
    const list = await client.nextEvent('system:member_list');
    expect((list.json?.['data'] as { members: { user: string }[] }).members[0]?.user).toBe('é'.repeat(127));
    await expectRefused('/v3/users', { user: `${'é'.repeat(127)}x` }, USER_ERROR);
  });

  it('refuses a JWT user claim over the limit, whatever the query says', async () => {
    const jwt = await sign('private-room', { name: 'x'.repeat(300) });
    await expectRefused('/v4/private-room', { user: 'short', jwt }, USER_ERROR);
  });
});

describe('V4 system::subscribe limits', () => {
  const subscribe = (client: TestClient, data: Record<string, unknown>): Promise<Record<string, unknown>> => {
    client.send({ event: 'system::subscribe', data });
    return client
      .next((f) => String(f.json?.['event']).startsWith('system::subscribe_'))
      .then((f) => f.json ?? {});
  };

  it('carries at most MAX_CHANNELS_PER_SOCKET (100) channels, its primary included', async () => {
    const client = await open('/v4/home');
    for (let i = 1; i < 100; i++) {
      expect((await subscribe(client, { channel: `c${i}` }))['event']).toBe('system::subscribe_success');
    }
    expect(await subscribe(client, { channel: 'one-too-many' })).toEqual({
      event: 'system::subscribe_error',
      data: {
        channel: 'one-too-many',
        error:
          'Too many channels: a socket carries at most 100 (MAX_CHANNELS_PER_SOCKET), its primary included',
      },
    });
    client.send({ event: 'system::unsubscribe', data: { channel: 'c1' } });
    await client.nextEvent('system::unsubscribe_success');
    expect((await subscribe(client, { channel: 'now-fits' }))['event']).toBe('system::subscribe_success');
  });

  it('refuses a uuid, a user or a JWT user claim over the limits with subscribe_error', async () => {
    const client = await open('/v4/home-ids');
    const refused = (channel: string, error: string) => ({
      event: 'system::subscribe_error',
      data: { channel, error },
    });
    expect(await subscribe(client, { channel: 'a', uuid: 'u'.repeat(129) })).toEqual(
      refused('a', UUID_ERROR),
    );
    expect(await subscribe(client, { channel: 'b', user: { bio: 'x'.repeat(250) } })).toEqual(
      refused('b', USER_ERROR),
    );
    const jwt = await sign('private-c', 'y'.repeat(255));
    expect(await subscribe(client, { channel: 'private-c', jwt })).toEqual(refused('private-c', USER_ERROR));
    expect((await subscribe(client, { channel: 'd', uuid: 'u'.repeat(128), user: 'ok' }))['event']).toBe(
      'system::subscribe_success',
    );
  });
});
