import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { rawRequest } from '@switchboard/harness';
import { createMetrics } from '@switchboard/core';
import { createAccountApi } from '../src';
import { authA, KEY_A, populatedEngine, silentLogger, testConfig } from './fixtures';

const app = async (
  env: Record<string, string>,
  metrics = createMetrics({ service: 'account-api', defaultMetrics: false }),
) => ({
  app: createAccountApi({
    engine: await populatedEngine(),
    logger: silentLogger(),
    config: testConfig(env),
    metrics,
  }),
  metrics,
});

describe('failed authentications on the account API', () => {
  it('refuses a client address past AUTH_FAILURES_PER_ADDRESS with 429 and Retry-After, a right secret too', async () => {
    const { app: api, metrics } = await app({ AUTH_FAILURES_PER_ADDRESS: '3' });
    await request(api).get('/api/domains').set({ key: 'nobody', secret: 'guess' }).expect(401);
    await request(api).get('/api/domains').set({ key: 'nobody-2', secret: 'guess' }).expect(401);
    await request(api).get('/api/domains').set({ key: KEY_A.key, secret: 'guess' }).expect(401);
    const refused = await request(api).get('/api/domains').set(authA).expect(429);
    expect(refused.body).toEqual({
      code: 'SB_AUTH_RATE_LIMITED',
      error: expect.stringMatching(
        /^Too many failed authentications from this address; requests are refused for \d+ s$/,
      ),
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await metrics.render()).toMatch(
      /^switchboard_auth_failures_total\{api="account",service="account-api"\} 3$/m,
    );
  });

  it('never locks a key’s owner out: wrong secrets for the key from 25 addresses, the owner is still served', async () => {
    // Default limits (20 failures per address per 60 s). The key is public: anyone may present it.
    const { app: api } = await app({ TRUSTED_PROXIES: '127.0.0.1,::1' });
    const from = (address: string) => ({ 'x-forwarded-for': `10.9.9.9, ${address}` });
    for (let i = 1; i <= 25; i++) {
      await request(api)
        .get('/api/domains')
        .set(from(`192.0.2.${i}`))
        .set({ key: KEY_A.key, secret: 'wrong-secret' })
        .expect(401);
    }
    await request(api).get('/api/domains').set(from('198.51.100.1')).set(authA).expect(200);
    // The per-address limit still holds for one address, a right secret included.
    for (let i = 0; i < 20; i++) {
      await request(api)
        .get('/api/domains')
        .set(from('192.0.2.200'))
        .set({ key: KEY_A.key, secret: `wrong-${i}` })
        .expect(401);
    }
    const refused = await request(api).get('/api/domains').set(from('192.0.2.200')).set(authA).expect(429);
    expect(refused.body.error).toMatch(/^Too many failed authentications from this address; /);
    await request(api).get('/api/domains').set(from('198.51.100.1')).set(authA).expect(200);
  });

  it('reads every X-Forwarded-For line: a line the client wrote before the proxy’s cannot choose the address', async () => {
    const { app: api } = await app({ AUTH_FAILURES_PER_ADDRESS: '2', TRUSTED_PROXIES: '127.0.0.1,::1' });
    const server = createServer(api).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    // Two header lines, the first written by the client, the second by its proxy.
    const get = (claimed: string, real: string, secret: string) =>
      rawRequest({
        port,
        requestLine: 'GET /api/domains HTTP/1.1',
        headers: [
          `key: ${KEY_A.key}`,
          `secret: ${secret}`,
          `X-Forwarded-For: ${claimed}`,
          `X-Forwarded-For: ${real}`,
        ],
      }).then((reply) => reply.status);
    try {
      expect(await get('192.0.2.1', '198.51.100.7', 'wrong-1')).toBe(401);
      expect(await get('192.0.2.2', '198.51.100.7', 'wrong-2')).toBe(401);
      expect(await get('192.0.2.3', '198.51.100.7', KEY_A.secret)).toBe(429);
      expect(await get('198.51.100.7', '198.51.100.8', KEY_A.secret)).toBe(200);
    } finally {
      server.close();
    }
  });

  it('refuses a secret header longer than 256 characters with 400 at once', async () => {
    const { app: api } = await app({ AUTH_FAILURES_PER_ADDRESS: '1' });
    const refused = await request(api)
      .get('/api/domains')
      .set({ key: KEY_A.key, secret: 's'.repeat(300) })
      .expect(400);
    expect(refused.body).toEqual({
      code: 'SB_INVALID_FIELD',
      error: 'Invalid header "secret": must be at most 256 characters',
    });
    // Not counted as a failed authentication.
    await request(api).get('/api/domains').set(authA).expect(200);
  });

  it('answers with X-Content-Type-Options: nosniff, errors included', async () => {
    const { app: api } = await app({});
    const ok = await request(api).get('/api/domains').set(authA).expect(200);
    expect(ok.headers['x-content-type-options']).toBe('nosniff');
    const denied = await request(api).get('/api/domains').set({ key: KEY_A.key, secret: 'nope' }).expect(401);
    expect(denied.headers['x-content-type-options']).toBe('nosniff');
    const missing = await request(api).get('/api/no-such-thing').expect(404);
    expect(missing.headers['x-content-type-options']).toBe('nosniff');
  });

  it('does not count successes or missing headers', async () => {
    const { app: api } = await app({ AUTH_FAILURES_PER_ADDRESS: '1' });
    for (let i = 0; i < 3; i += 1) {
      await request(api).get('/api/domains').set(authA).expect(200);
      await request(api).get('/api/domains').set({ key: KEY_A.key }).expect(401);
    }
    await request(api).get('/api/domains').set({ key: KEY_A.key, secret: 'wrong' }).expect(401);
    await request(api).get('/api/domains').set(authA).expect(429);
  });
});
