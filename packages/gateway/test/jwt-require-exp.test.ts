import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, startGateway, TestClient } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { SignJWT } from 'jose';

/** `JWT_REQUIRE_EXP`: channel JWTs without `exp` are refused when on; PieSocket's behaviour when off. */
const AUTH_FAILED = 'Authentication failed, provide valid jwt token.';
const running: TestGateway[] = [];
const clients: TestClient[] = [];
afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(running.map((node) => node.close()));
});

async function start(env: Record<string, string>): Promise<{ node: TestGateway; key: ApiKeyRecord }> {
  const node = await startGateway({ memoryState: createMemoryState(), env });
  running.push(node);
  return { node, key: await createTestKey(node.engine) };
}

const sign = (secret: string, channel: string, expiresAt?: number): Promise<string> => {
  const jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(channel);
  if (expiresAt !== undefined) jwt.setExpirationTime(expiresAt);
  return jwt.sign(new TextEncoder().encode(secret));
};
const inAnHour = (): number => Math.floor(Date.now() / 1000) + 3600;

const track = (client: TestClient): TestClient => (clients.push(client), client);

describe('JWT_REQUIRE_EXP', () => {
  it('off (default): a channel JWT without exp is accepted', async () => {
    const { node, key } = await start({});
    const url = node.wsUrl('/v3/private-a', { api_key: key.key, jwt: await sign(key.secret, 'private-a') });
    track(await connectClient(url));
  });

  it('on: a JWT without exp is refused with 4504 (V3 and V4 URLs, V4 subscribe); one with exp is accepted', async () => {
    const { node, key } = await start({ JWT_REQUIRE_EXP: '1' });
    for (const protocol of ['v3', 'v4']) {
      const refused = track(
        new TestClient(
          node.wsUrl(`/${protocol}/private-a`, {
            api_key: key.key,
            jwt: await sign(key.secret, 'private-a'),
          }),
        ),
      );
      expect((await refused.next()).json).toEqual({ error: AUTH_FAILED });
      expect((await refused.closed).code).toBe(4504);
      // Also on a public channel: a presented token must be valid.
      const publicRefused = track(
        new TestClient(
          node.wsUrl(`/${protocol}/open`, { api_key: key.key, jwt: await sign(key.secret, 'open') }),
        ),
      );
      expect((await publicRefused.closed).code).toBe(4504);
      const url = node.wsUrl(`/${protocol}/private-a`, {
        api_key: key.key,
        jwt: await sign(key.secret, 'private-a', inAnHour()),
      });
      track(await connectClient(url));
    }

    const socket = track(await connectClient(node.wsUrl('/v4/lobby', { api_key: key.key })));
    const subscribe = async (jwt: string): Promise<unknown> => {
      socket.send({ event: 'system::subscribe', data: { channel: 'private-b', jwt } });
      return (await socket.next((f) => /^system::subscribe_/.test(String(f.json?.['event'])))).json;
    };
    expect(await subscribe(await sign(key.secret, 'private-b'))).toEqual({
      event: 'system::subscribe_error',
      data: { channel: 'private-b', error: AUTH_FAILED },
    });
    expect(await subscribe(await sign(key.secret, 'private-b', inAnHour()))).toEqual({
      event: 'system::subscribe_success',
      data: { channel: 'private-b' },
    });
  });
});
