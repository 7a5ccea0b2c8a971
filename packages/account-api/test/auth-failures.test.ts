import request from 'supertest';
import { createMetrics } from '@switchboard/core';
import { createAccountApi } from '../src';
import { authA, authB, KEY_A, populatedEngine, silentLogger, testConfig } from './fixtures';

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
    const { app: api, metrics } = await app({ AUTH_FAILURES_PER_ADDRESS: '3', AUTH_FAILURES_PER_KEY: '0' });
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

  it('refuses a key past AUTH_FAILURES_PER_KEY from any address; other keys are served (TRUSTED_PROXIES)', async () => {
    const { app: api } = await app({
      AUTH_FAILURES_PER_KEY: '2',
      AUTH_FAILURES_PER_ADDRESS: '2',
      TRUSTED_PROXIES: '127.0.0.1,::1',
    });
    const from = (address: string) => ({ 'x-forwarded-for': `10.9.9.9, ${address}` });
    await request(api)
      .get('/api/domains')
      .set(from('192.0.2.1'))
      .set({ key: KEY_A.key, secret: 'x' })
      .expect(401);
    await request(api)
      .get('/api/domains')
      .set(from('192.0.2.2'))
      .set({ key: KEY_A.key, secret: 'y' })
      .expect(401);
    const refused = await request(api).get('/api/domains').set(from('192.0.2.3')).set(authA).expect(429);
    expect(refused.body.error).toMatch(/^Too many failed authentications for this API key; /);
    await request(api).get('/api/domains').set(from('192.0.2.4')).set(authB).expect(200);
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
