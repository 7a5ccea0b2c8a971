import request from 'supertest';
import { createMetrics } from '@switchboard/core';
import { createAccountApi } from '../src';
import { authA, populatedEngine, silentLogger, testConfig } from './fixtures';

test('counts requests by route pattern and status, never by raw URL', async () => {
  const metrics = createMetrics({ service: 'account-api', defaultMetrics: false });
  const app = createAccountApi({
    engine: await populatedEngine(),
    logger: silentLogger(),
    config: testConfig(),
    metrics,
  });
  await request(app).get('/api/connections').set(authA).expect(200);
  await request(app).get('/api/connections?page=1').set(authA).expect(200);
  await request(app).get('/api/connections').expect(401);
  await request(app).get('/api/no/such/path/123').expect(404);
  const values = (await metrics.registry.getMetricsAsJSON()).find(
    (m) => m.name === 'switchboard_http_requests_total',
  )!.values;
  const count = (route: string, status: string): number =>
    values.find((v) => v.labels['route'] === route && v.labels['status'] === status)?.value ?? 0;
  expect(count('/api/connections', '200')).toBe(2);
  expect(count('/api/connections', '401')).toBe(1);
  expect(count('other', '404')).toBe(1);
});
