import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { freePort, startHaproxy, startRedis, startSwitchboardProcess, waitFor } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { RedisServer, RunningHaproxy, SwitchboardProcess } from '@switchboard/harness';
import type { TestClient } from '@switchboard/testing';
import { startNodeProcess } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/**
 * Every log line the product writes in a run that uses every credential path: a gateway behind
 * the shipped HAProxy config (JWT in the query and in a header, a bad JWT, publishes with the
 * secret in the body, a wrong secret, a kick) and the account API (secret header, a wrong one,
 * and a request with credentials in its query while Redis is down, which is logged with its path).
 * No secret or JWT may appear in any of them: not in the processes' logs, not in HAProxy's.
 */

const KEY = `logs${randomBytes(4).toString('hex')}`;
const SECRET = randomBytes(20).toString('hex');
const WRONG_SECRET = `wrong-${randomBytes(12).toString('hex')}`;
const sign = (secret: string, channel: string): Promise<string> =>
  new SignJWT({ user: 'alice' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(channel)
    .sign(new TextEncoder().encode(secret));

let redis: RedisServer;
let gateway: NodeProcess;
let account: SwitchboardProcess;
let haproxy: RunningHaproxy;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `lr${randomBytes(3).toString('hex')}`,
    SWITCHBOARD_KEYS: JSON.stringify([{ key: KEY, secret: SECRET }]),
    LOG_LEVEL: 'trace',
  };
  gateway = await startNodeProcess({ ...env, TRUSTED_PROXIES: '127.0.0.1' }, 'gw1');
  account = startSwitchboardProcess(['account-api'], { ...env, ACCOUNT_PORT: '0', HOST: '127.0.0.1' });
  await account.waitForLog({ msg: 'ready', service: 'account-api' });
  haproxy = await startHaproxy({
    listenPort: await freePort(),
    backends: [{ name: 'gw1', port: gateway.port }],
    checkIntervalMs: 200,
  });
  await waitFor('haproxy sees gw1 UP', async () => (await haproxy.servers())[0]?.status === 'UP', 10_000);
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const proc of [gateway?.proc, account]) proc?.kill('SIGKILL');
  await haproxy?.close();
  await redis?.stop();
});

it('no secret or JWT reaches any log line', async () => {
  const balancer = `127.0.0.1:${haproxy.port}`;
  const jwtInQuery = await sign(SECRET, 'private-query');
  const jwtInHeader = await sign(SECRET, 'private-header');
  const badJwt = await sign(WRONG_SECRET, 'private-bad');
  const ws = (path: string, query: Record<string, string>) =>
    `ws://${balancer}${path}?${new URLSearchParams({ api_key: KEY, ...query }).toString()}`;

  const viaQuery = await connectClient(ws('/v3/private-query', { jwt: jwtInQuery }));
  const viaHeader = await connectClient(ws('/v4/private-header', {}), { jwt: jwtInHeader });
  const refused = await connectClient(ws('/v3/private-bad', { jwt: badJwt }));
  clients.push(viaQuery, viaHeader, refused);
  expect((await refused.closed).code).toBe(4504);

  const api = (path: string, body: Record<string, unknown>) => postJson(`http://${balancer}${path}`, body);
  expect(
    (await api('/api/publish', { key: KEY, secret: SECRET, channel: 'private-query', message: 'hi' })).status,
  ).toBe(200);
  expect((await viaQuery.next()).text).toBe('hi');
  expect(
    (await api('/api/publish', { key: KEY, secret: WRONG_SECRET, channel: 'c', message: 'm' })).status,
  ).toBe(401);
  expect((await api('/api/kick', { key: KEY, secret: SECRET, reason: 'Maintenance' })).status).toBe(200);
  expect((await viaQuery.closed).code).toBe(4509);

  const accountUrl = `http://127.0.0.1:${Number((await account.waitForLog({ msg: 'ready' }))['port'])}`;
  const ask = (path: string, secret: string) =>
    fetch(`${accountUrl}${path}`, { headers: { key: KEY, secret } });
  expect((await ask('/api/connections', SECRET)).status).toBe(200);
  expect((await ask('/api/connections', WRONG_SECRET)).status).toBe(401);
  await redis.kill();
  await waitFor(
    'account API sees Redis down',
    async () => (await fetch(`${accountUrl}/api/health`)).status === 503,
    10_000,
  );
  const query = new URLSearchParams({ secret: SECRET, jwt: jwtInQuery }).toString();
  expect((await ask(`/api/domains?${query}`, SECRET)).status).toBe(503);
  const logged = await account.waitForLog({ msg: 'engine unavailable' });
  expect(logged['path']).toBe('/api/domains');
  await redis.restart();

  // HAProxy logs a WebSocket when its tunnel ends: both upgrades were kicked or refused.
  await waitFor(
    'HAProxy logs the refused upgrade',
    () => haproxy.output().includes('/v3/private-bad'),
    10_000,
  );
  await waitFor(
    'HAProxy logs the kicked upgrade',
    () => haproxy.output().includes('/v3/private-query'),
    10_000,
  );

  const lines = [...gateway.proc.lines, ...account.lines, ...haproxy.output().split('\n')];
  // Every source was captured: the gateway's start, the account API's outage line, HAProxy's upgrades.
  expect(gateway.proc.lines.some((line) => line.includes('"ready"'))).toBe(true);
  expect(account.lines.some((line) => line.includes('engine unavailable'))).toBe(true);
  for (const [what, value] of Object.entries({ SECRET, WRONG_SECRET, jwtInQuery, jwtInHeader, badJwt })) {
    const leaks = lines.filter((line) => line.includes(value) || line.includes(encodeURIComponent(value)));
    expect({ what, leaks }).toEqual({ what, leaks: [] });
  }
  // Each JWT's signature alone would do as well; none of it is there either.
  for (const token of [jwtInQuery, jwtInHeader, badJwt]) {
    const signature = token.split('.')[2]!;
    expect(lines.filter((line) => line.includes(signature))).toEqual([]);
  }
});
