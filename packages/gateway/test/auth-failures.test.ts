import * as core from '@switchboard/core';
import { createMemoryState, createMetrics, UNKNOWN_KEY_SECRET } from '@switchboard/core';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';

// The comparison itself is the behaviour under test: an unknown key must cost one like a known one.
jest.mock('@switchboard/core', () => {
  const actual: typeof core = jest.requireActual('@switchboard/core');
  return { ...actual, secretMatches: jest.fn(actual.secretMatches) };
});
const secretMatches = core.secretMatches as jest.MockedFunction<typeof core.secretMatches>;

const running: TestGateway[] = [];
const start = async (env: Record<string, string>, metrics?: core.Metrics): Promise<TestGateway> => {
  const node = await startGateway({ memoryState: createMemoryState(), env, ...(metrics ? { metrics } : {}) });
  running.push(node);
  return node;
};
afterAll(() => Promise.all(running.map((node) => node.close())));

/** POST /api/publish as a client behind a proxy that says it is `address`. */
const publishFrom = async (node: TestGateway, address: string, key: string, secret: string) => {
  const response = await fetch(`${node.httpUrl}/api/publish`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.9.9.9, ${address}` },
    body: JSON.stringify({ key, secret, channel: 'c', message: 'm' }),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
};

describe('cluster API authentication', () => {
  it('compares the secret for an unknown key too, so keys cannot be probed by timing', async () => {
    const node = await start({});
    secretMatches.mockClear();
    const reply = await postJson(`${node.httpUrl}/api/publish`, {
      key: 'no-such-key',
      secret: 'guess-1',
      channel: 'c',
      message: 'm',
    });
    expect(reply).toMatchObject({ status: 401, body: { code: 'SB_UNAUTHORIZED' } });
    expect(secretMatches).toHaveBeenCalledTimes(1);
    expect(secretMatches).toHaveBeenCalledWith('guess-1', UNKNOWN_KEY_SECRET);
  });

  it('refuses a client address past AUTH_FAILURES_PER_ADDRESS with 429 and Retry-After, a right secret too', async () => {
    const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
    const node = await start({ AUTH_FAILURES_PER_ADDRESS: '3' }, metrics);
    const key = await createTestKey(node.engine);
    const publish = (body: Record<string, unknown>) =>
      postJson(`${node.httpUrl}/api/v4/publish`, { channel: 'c', message: 'm', ...body });

    for (const guess of ['k-one', 'k-two', key.key]) {
      expect((await publish({ key: guess, secret: 'wrong-secret' })).status).toBe(401);
    }
    const refused = await publish({ key: key.key, secret: key.secret });
    expect(refused).toMatchObject({
      status: 429,
      body: {
        success: false,
        code: 'SB_AUTH_RATE_LIMITED',
        error: expect.stringMatching(
          /^Too many failed authentications from this address; requests are refused for \d+ s$/,
        ),
      },
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await metrics.render()).toMatch(
      /^switchboard_auth_failures_total\{api="cluster",service="gateway"\} 3$/m,
    );
  });

  it('never locks a key’s owner out: wrong secrets for the key from 25 addresses, the owner still publishes', async () => {
    // Default limits (20 failures per address per 60 s). The key is public: anyone may present it.
    const node = await start({ TRUSTED_PROXIES: '127.0.0.1,::1' });
    const target = await createTestKey(node.engine);
    for (let i = 1; i <= 25; i++) {
      expect((await publishFrom(node, `192.0.2.${i}`, target.key, 'wrong-secret')).status).toBe(401);
    }
    expect((await publishFrom(node, '198.51.100.1', target.key, target.secret)).status).toBe(200);
    // The per-address limit still holds: one address that fails 20 times is refused, a right secret too.
    for (let i = 0; i < 20; i++) {
      expect((await publishFrom(node, '192.0.2.200', target.key, `wrong-${i}`)).status).toBe(401);
    }
    const refused = await publishFrom(node, '192.0.2.200', target.key, target.secret);
    expect(refused.status).toBe(429);
    expect(refused.body['error']).toMatch(/^Too many failed authentications from this address; /);
    expect((await publishFrom(node, '198.51.100.1', target.key, target.secret)).status).toBe(200);
  });

  it('refuses a secret longer than 256 characters with 400 at once, and keeps nothing of it', async () => {
    const node = await start({ AUTH_FAILURES_PER_ADDRESS: '1' });
    const key = await createTestKey(node.engine);
    const before = core.rememberedSecretDigests();
    secretMatches.mockClear();
    for (let i = 0; i < 3; i++) {
      const reply = await postJson(`${node.httpUrl}/api/publish`, {
        key: key.key,
        secret: `${i}`.repeat(300),
        channel: 'c',
        message: 'm',
      });
      expect(reply).toMatchObject({
        status: 400,
        body: { code: 'SB_INVALID_FIELD', error: 'Invalid field "secret": must be at most 256 characters' },
      });
    }
    expect(secretMatches).not.toHaveBeenCalled();
    expect(core.rememberedSecretDigests()).toBe(before);
    // Not a failed authentication: the address is not limited by them.
    const ok = await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'c',
      message: 'm',
    });
    expect(ok.status).toBe(200);
  });

  it('does not count successes or malformed requests', async () => {
    const node = await start({ AUTH_FAILURES_PER_ADDRESS: '2' });
    const key = await createTestKey(node.engine);
    const publish = (body: Record<string, unknown>) =>
      postJson(`${node.httpUrl}/api/publish`, { channel: 'c', message: 'm', ...body });
    for (let i = 0; i < 5; i += 1) {
      expect((await publish({ key: key.key, secret: key.secret })).status).toBe(200);
      expect((await publish({ key: key.key })).status).toBe(400);
    }
    expect((await publish({ key: key.key, secret: 'wrong-secret' })).status).toBe(401);
    expect((await publish({ key: key.key, secret: key.secret })).status).toBe(200);
  });
});
