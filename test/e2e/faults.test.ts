import { randomBytes } from 'node:crypto';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '@switchboard/cli';
import type { Engine } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient } from '@switchboard/testing';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/** Node crashes, Redis outages and drains, with real processes (docs/scaling.md). */
const NODE_TIMEOUT_MS = 3000;
const key = testKey();
let redis: RedisServer;
let env: Record<string, string>;
let reader: Engine;
const nodes: NodeProcess[] = [];
const clients: TestClient[] = [];

const start = async (id?: string): Promise<NodeProcess> => {
  const node = await startNodeProcess(env, id);
  nodes.push(node);
  return node;
};
const at = async (
  node: NodeProcess,
  path: string,
  query: Record<string, string> = {},
): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};
const api = (node: NodeProcess, path: string, body: Record<string, unknown>) =>
  postJson(`${node.httpUrl}${path}`, { key: key.key, secret: key.secret, ...body });
const health = async (node: NodeProcess): Promise<{ status: number; body: Record<string, unknown> }> => {
  const response = await fetch(`${node.httpUrl}/api/health`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const memberLeft = (user: string) => (f: { json: Record<string, unknown> | undefined; text: string }) =>
  f.json?.['event'] === 'system::member_left' && f.text.includes(`"user":"${user}"`);

beforeAll(async () => {
  redis = await startRedis();
  env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `f${randomBytes(4).toString('hex')}`,
    SWITCHBOARD_KEYS: JSON.stringify([{ key: key.key, secret: key.secret, domains: [] }]),
    NODE_TIMEOUT_MS: String(NODE_TIMEOUT_MS),
    HEARTBEAT_INTERVAL_MS: '500',
    DRAIN_GRACE_MS: '3000',
  };
  const config = loadConfig({}, { ...env, LOG_LEVEL: 'silent' });
  reader = await createEngine(config, { logger: createLogger({ level: 'silent' }) });
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
  for (const node of nodes.splice(0)) node.proc.kill('SIGKILL');
});
afterAll(async () => {
  await reader.close();
  await redis.stop();
});

describe('a node that dies without warning', () => {
  it('has its members and counts removed, with one member_left per identity, within NODE_TIMEOUT_MS', async () => {
    const [a, b] = [await start(), await start()];
    const watcher = await at(a, '/v4/crash', { presence: '1', user: 'watcher' });
    await watcher.nextEvent('system::member_list');
    await at(a, '/v4/crash', { presence: '1', user: 'alice', uuid: 'alice-a' });
    await at(b, '/v4/crash', { presence: '1', user: 'alice', uuid: 'alice-b' });
    const bob = await at(b, '/v4/crash', { presence: '1', user: 'bob' });
    await at(b, '/v3/crash', { presence: '1', user: 'carl' });
    await watcher.next((f) => f.json?.['event'] === 'system::member_joined' && f.text.includes('"bob"'));
    await bob.nextEvent('system::member_list');
    await waitFor('counts written', async () => (await reader.counts.sum(key.key)) === 5, 5000);

    const killedAt = Date.now();
    b.proc.kill('SIGKILL');
    await watcher.next(memberLeft('bob'), NODE_TIMEOUT_MS + 2000);
    const convergenceMs = Date.now() - killedAt;
    process.stdout.write(
      `crash convergence: member_left ${convergenceMs} ms after SIGKILL (bound ${NODE_TIMEOUT_MS} ms)\n`,
    );
    expect(convergenceMs).toBeLessThanOrEqual(NODE_TIMEOUT_MS + 500);

    await waitFor(
      'counts of the dead node removed',
      async () => (await reader.counts.sum(key.key)) === 2,
      2000,
    );
    expect((await reader.counts.list(key.key)).items).toEqual([{ channel: 'crash', count: 2 }]);
    expect((await api(a, '/api/v4/members', { channel: 'crash' })).body).toMatchObject({ count: 2 });
    expect((await api(a, '/api/members', {})).body).toMatchObject({ success: true, channels: {}, total: 0 });
    await watcher.expectSilence((f) => f.json?.['event'] === 'system::member_left', 500);
  });

  it('does not inherit or double its entries when it restarts under the same NODE_ID', async () => {
    const a = await start();
    const watcher = await at(a, '/v4/again', { presence: '1', user: 'watcher' });
    await watcher.nextEvent('system::member_list');
    const first = await start('same-id');
    const ghost = await at(first, '/v4/again', { presence: '1', user: 'ghost' });
    await ghost.nextEvent('system::member_list');
    first.proc.kill('SIGKILL');
    await first.proc.exited;
    const second = await start('same-id');
    await watcher.next(memberLeft('ghost'), 2000);
    const fresh = await at(second, '/v4/again', { presence: '1', user: 'fresh' });
    await fresh.nextEvent('system::member_list');
    expect((await api(a, '/api/v4/members', { channel: 'again' })).body).toMatchObject({
      members: ['fresh', 'watcher'],
      count: 2,
    });
    const counts = await reader.counts.list(key.key);
    expect(counts.items.find((c) => c.channel === 'again')?.count).toBe(2);
  });
});

describe('Redis outages', () => {
  it('keeps nodes and sockets up with 503s, then recovers delivery, presence and counts without a restart', async () => {
    const a = await start();
    const b = await start();
    const c1 = await at(a, '/v4/outage', { presence: '1', user: 'c1' });
    const c2 = await at(a, '/v4/outage', { presence: '1', user: 'c2' });
    const remote = await at(b, '/v4/outage', { presence: '1', user: 'remote' });
    for (const c of [c1, c2, remote]) await c.nextEvent('system::member_list');
    expect((await health(a)).status).toBe(200);

    await redis.kill();
    await waitFor('health 503', async () => (await health(a)).status === 503, 5000);
    expect((await health(a)).body).toMatchObject({ status: 'unavailable' });
    expect((await fetch(`${a.httpUrl}/api/live`)).status).toBe(200);
    expect((await api(a, '/api/publish', { channel: 'outage', message: 'x' })).status).toBe(503);
    expect((await api(a, '/api/v4/members', { channel: 'outage' })).status).toBe(503);
    expect((await api(a, '/api/v4/kick', { user: 'c1' })).status).toBe(503);
    c1.send('{"event":"local"}');
    expect((await c2.next((f) => f.text === '{"event":"local"}')).text).toBe('{"event":"local"}');
    // A node admits a key it has seen before, from its last known record.
    const late = await at(a, '/v4/outage', { presence: '1', user: 'late' });
    c1.send('{"event":"hello-late"}');
    await late.next((f) => f.text === '{"event":"hello-late"}');

    const restartedAt = Date.now();
    await redis.restart();
    await waitFor(
      'health ok again',
      async () => (await health(a)).status === 200 && (await health(b)).status === 200,
      15_000,
    );
    process.stdout.write(
      `Redis restart recovery: health ok ${Date.now() - restartedAt} ms after redis-server restarted\n`,
    );
    await waitFor(
      'presence rewritten',
      async () => ((await api(a, '/api/v4/members', { channel: 'outage' })).body['count'] as number) === 4,
      5000,
    );
    // The test's own reader reconnects on its own schedule, which may be later than the gateways'.
    await waitFor('the reader reconnected', () => reader.isAvailable(), 5000);
    await waitFor('counts rewritten', async () => (await reader.counts.sum(key.key)) === 4, 5000);
    expect((await api(b, '/api/v4/publish', { channel: 'outage', message: 'back' })).status).toBe(200);
    for (const c of [c1, c2, late, remote]) await c.next((f) => f.text === 'back');
  });
});

describe('SIGTERM', () => {
  it('drains: health draining, 4000 closes, presence removed at once, clean exit within the grace period', async () => {
    const a = await start();
    const b = await start();
    const watcher = await at(a, '/v4/drain', { presence: '1', user: 'watcher' });
    await watcher.nextEvent('system::member_list');
    const leaving = await Promise.all(
      [1, 2, 3].map((i) => at(b, '/v4/drain', { presence: '1', user: `u${i}` })),
    );
    for (const client of leaving) await client.nextEvent('system::member_list');
    const stoppedAt = Date.now();
    b.proc.kill('SIGTERM');
    for (const client of leaving) expect((await client.closed).code).toBe(4000);
    const left = new Set<string>();
    while (left.size < 3) {
      const frame = await watcher.nextEvent('system::member_left', 2000);
      left.add(String((frame.json?.['data'] as { member: { user: string } }).member.user));
    }
    expect([...left].sort()).toEqual(['u1', 'u2', 'u3']);
    expect(await b.proc.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(3000);
    expect(b.proc.lines.some((line) => line.includes('"msg":"draining"'))).toBe(true);
    expect((await reader.counts.list(key.key)).items.find((c) => c.channel === 'drain')?.count).toBe(1);
  });
});
