import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { TestClient, connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { SignJWT } from 'jose';

let node: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

const track = (client: TestClient): TestClient => {
  clients.push(client);
  return client;
};
/** Connects and expects the terminal rejection: an error frame, then the close code. */
async function expectRejected(
  url: string,
  code: number,
  error: string,
  headers?: Record<string, string>,
): Promise<void> {
  const client = track(new TestClient(url, headers));
  expect((await client.next()).json).toEqual({ error });
  const closed = await client.closed;
  expect(closed.code).toBe(code);
  expect(closed.reason).toBe(error);
}
const sign = (
  secret: string,
  channel: string,
  claims: Record<string, unknown> = {},
  expiresAt?: number,
): Promise<string> => {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject(channel);
  if (expiresAt !== undefined) jwt.setExpirationTime(expiresAt);
  return jwt.sign(new TextEncoder().encode(secret));
};
const now = (): number => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  node = await startGateway({ memoryState: createMemoryState() });
  key = await createTestKey(node.engine, { domains: ['example.com'] });
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(() => node.close());

describe('admission (protocol.md order, errors.md codes)', () => {
  it('rejects a missing or unknown api_key with 4501', async () => {
    await expectRejected(node.wsUrl('/v3/room'), 4501, 'Missing api_key');
    await expectRejected(node.wsUrl('/v4/room', { api_key: 'nope' }), 4501, 'Invalid API key');
  });

  it('allows listed domains and their subdomains, servers without Origin, and refuses others with 4503', async () => {
    const url = node.wsUrl('/v3/room', { api_key: key.key });
    const admitted = [
      track(await connectClient(url, { origin: 'https://example.com' })),
      track(await connectClient(url, { origin: 'https://app.example.com:8443' })),
      track(await connectClient(url)),
    ];
    const message = { key: key.key, secret: key.secret, channel: 'room', message: 'admitted' };
    expect((await postJson(`${node.httpUrl}/api/publish`, message)).status).toBe(200);
    for (const client of admitted) expect((await client.next()).text).toBe('admitted');
    await expectRejected(url, 4503, 'Origin not allowed for this API key', {
      origin: 'https://evil-example.com',
    });
  });

  it('checks the key before the origin and the origin before the channel name', async () => {
    await expectRejected(node.wsUrl('/v3/bad%20name', { api_key: 'nope' }), 4501, 'Invalid API key', {
      origin: 'https://evil.com',
    });
    await expectRejected(
      node.wsUrl('/v3/bad%20name', { api_key: key.key }),
      4503,
      'Origin not allowed for this API key',
      { origin: 'https://evil.com' },
    );
  });

  it('rejects invalid channel names with 4502 and accepts Laravel-style names up to 128 characters', async () => {
    const text = 'Invalid channel name: use 1 to 128 characters of A-Z a-z 0-9 _ - . = @ , ;';
    await expectRejected(node.wsUrl('/v3/has%20space', { api_key: key.key }), 4502, text);
    await expectRejected(node.wsUrl(`/v4/${'a'.repeat(129)}`, { api_key: key.key }), 4502, text);
    await expectRejected(node.wsUrl('/v4/', { api_key: key.key }), 4502, text);
    track(
      await connectClient(
        node.wsUrl('/v3/private-App.Models.User.1', {
          api_key: key.key,
          jwt: await sign(key.secret, 'private-App.Models.User.1'),
        }),
      ),
    );
    track(await connectClient(node.wsUrl(`/v3/${'a'.repeat(128)}`, { api_key: key.key })));
  });

  it('answers other paths with HTTP 404, not a WebSocket', async () => {
    const client = new TestClient(node.wsUrl('/v5/room', { api_key: key.key }));
    await expect(client.opened).rejects.toThrow(/404/);
  });

  describe('JWT', () => {
    const auth = 'Authentication failed, provide valid jwt token.';
    const url = (channel: string, query: Record<string, string> = {}): string =>
      node.wsUrl(`/v3/${channel}`, { api_key: key.key, ...query });

    it('guards private- channels: none, wrong sub, wrong secret and expired tokens get 4504', async () => {
      await expectRejected(url('private-a'), 4504, auth);
      await expectRejected(url('private-a', { jwt: await sign(key.secret, 'private-b') }), 4504, auth);
      await expectRejected(url('private-a', { jwt: await sign('not-the-secret', 'private-a') }), 4504, auth);
      await expectRejected(
        url('private-a', { jwt: await sign(key.secret, 'private-a', {}, now() - 30) }),
        4504,
        auth,
      );
      await expectRejected(url('private-a', { jwt: 'not.a.jwt' }), 4504, auth);
    });

    it('accepts a valid token from the query or the jwt header, with 5 s of exp leeway', async () => {
      track(
        await connectClient(url('private-a', { jwt: await sign(key.secret, 'private-a', {}, now() + 60) })),
      );
      track(
        await connectClient(url('private-a', { jwt: await sign(key.secret, 'private-a', {}, now() - 2) })),
      );
      track(await connectClient(url('private-a'), { jwt: await sign(key.secret, 'private-a') }));
    });

    it('takes the user claim (keeping its JSON type) over the query user', async () => {
      const token = await sign(key.secret, 'private-p', { user: { id: 7, name: 'Ann' } });
      const client = track(
        await connectClient(url('private-p', { jwt: token, presence: '1', user: 'ignored', uuid: 'u1' })),
      );
      expect((await client.nextEvent('system:member_list')).json?.['data']).toEqual({
        members: [{ uuid: 'u1', user: { id: 7, name: 'Ann' } }],
      });
    });

    it('guards every channel of a forceAuth key', async () => {
      const strict = await createTestKey(node.engine, { forceAuth: true });
      await expectRejected(node.wsUrl('/v4/open', { api_key: strict.key }), 4504, auth);
      track(
        await connectClient(
          node.wsUrl('/v4/open', { api_key: strict.key, jwt: await sign(strict.secret, 'open') }),
        ),
      );
    });
  });

  it('turns presence on for presence- channels and for presence=1/true/bare, off for 0/false/no', async () => {
    // With presence, the member list is the first frame, sent when the socket joins; without, a
    // message published after the socket opened is.
    const presenceOf = async (channel: string, query: Record<string, string>): Promise<boolean> => {
      const client = track(await connectClient(node.wsUrl(`/v3/${channel}`, { api_key: key.key, ...query })));
      const message = { key: key.key, secret: key.secret, channel, message: 'probe' };
      expect((await postJson(`${node.httpUrl}/api/publish`, message)).status).toBe(200);
      const first = await client.next();
      if (first.text !== 'probe') await client.next((frame) => frame.text === 'probe');
      return first.json?.['event'] === 'system:member_list';
    };
    expect(await presenceOf('presence-room', {})).toBe(true);
    expect(await presenceOf('r1', { presence: 'true' })).toBe(true);
    expect(await presenceOf('r2', { presence: '' })).toBe(true);
    expect(await presenceOf('r3', { presence: '0' })).toBe(false);
    expect(await presenceOf('r4', { presence: 'no' })).toBe(false);
  });

  it('generates a uuid when the client sends none', async () => {
    const client = track(await connectClient(node.wsUrl('/v3/gen', { api_key: key.key, presence: '1' })));
    const list = (await client.nextEvent('system:member_list')).json?.['data'] as {
      members: Array<{ uuid: string; user?: unknown }>;
    };
    expect(list.members[0]?.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(list.members[0]).not.toHaveProperty('user');
  });
});

describe('connection limits', () => {
  it('closes with 4529 when the node or the key is full', async () => {
    const limited = await startGateway({
      memoryState: createMemoryState(),
      env: { MAX_CONNECTIONS_PER_NODE: '2' },
    });
    try {
      const k = await createTestKey(limited.engine);
      const url = limited.wsUrl('/v3/room', { api_key: k.key });
      const a = await connectClient(url);
      const b = await connectClient(url);
      const c = new TestClient(url);
      expect((await c.next()).json).toEqual({ error: 'Connection limit reached for this node' });
      expect((await c.closed).code).toBe(4529);
      a.close();
      b.close();
    } finally {
      await limited.close();
    }
  });

  it('counts a key across its channels', async () => {
    const limited = await startGateway({
      memoryState: createMemoryState(),
      env: { MAX_CONNECTIONS_PER_KEY: '1' },
    });
    try {
      const k = await createTestKey(limited.engine);
      const a = await connectClient(limited.wsUrl('/v3/one', { api_key: k.key }));
      const deadline = Date.now() + 5000;
      while ((await limited.engine.counts.sum(k.key)) !== 1) {
        if (Date.now() > deadline) throw new Error('the first connection was never counted');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const c = new TestClient(limited.wsUrl('/v4/two', { api_key: k.key }));
      expect((await c.next()).json).toEqual({ error: 'Connection limit reached for this API key (limit 1)' });
      expect((await c.closed).code).toBe(4529);
      a.close();
    } finally {
      await limited.close();
    }
  });
});
