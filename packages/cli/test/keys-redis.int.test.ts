import { randomBytes } from 'node:crypto';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '../src/engine';
import type { ApiKeyRecord, ControlCommand, Engine } from '@switchboard/core';
import { startRedis, startRedisCluster } from '@switchboard/harness';
import type { RedisClusterHandle, RedisServer } from '@switchboard/harness';
import { runKeys } from '../src/commands/keys';
import { startAccountApiProcess } from '../src/commands/account-api';
import { captured, tempDataDir } from './run-captured';

/** The real commands against a real Redis; a second engine stands in for a gateway. */

let redis: RedisServer;
let env: Record<string, string>;
let observer: Engine;
const controls: ControlCommand[] = [];
const data = tempDataDir();

beforeAll(async () => {
  redis = await startRedis();
  env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `cli-${randomBytes(4).toString('hex')}`,
    SWITCHBOARD_DATA_DIR: data.dir,
    LOG_LEVEL: 'silent',
  };
  observer = await createEngine(loadConfig(env), { logger: createLogger({ level: 'silent' }) });
  observer.broker.setHandlers({ message: () => undefined, control: (command) => controls.push(command) });
});

afterAll(async () => {
  await observer?.close();
  await redis?.stop();
  data.cleanup();
});

const keys = (...argv: string[]) => captured(() => runKeys(argv, env));

async function waitForControl(key: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!controls.some((c) => c.type === 'key-changed' && c.key === key)) {
    if (Date.now() > deadline) throw new Error(`no key-changed for ${key}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('switchboard keys on Redis', () => {
  test('create, list, domains and delete act on Redis and announce each change', async () => {
    const created = await keys('create', '--json', '--domain', 'example.com', '--force-auth');
    expect(created.result).toBe(0);
    const record = JSON.parse(created.stdout) as ApiKeyRecord;
    expect(await observer.keys.get(record.key)).toEqual(record);
    await waitForControl(record.key);

    const listed = await keys('list');
    expect(listed.stdout).toContain(record.key);
    expect(listed.stdout).not.toContain(record.secret);

    controls.length = 0;
    expect((await keys('domains', record.key, 'a.example', 'b.example')).result).toBe(0);
    expect((await observer.keys.get(record.key))?.domains).toEqual(['a.example', 'b.example']);
    await waitForControl(record.key);

    controls.length = 0;
    expect((await keys('delete', record.key)).result).toBe(0);
    expect(await observer.keys.get(record.key)).toBeNull();
    await waitForControl(record.key);

    const again = await keys('delete', record.key);
    expect(again.result).toBe(1);
    expect(again.stderr).toMatch(/Unknown API key/);
  });

  test('keys create --history-* and keys history store the override in Redis and announce it', async () => {
    const created = await keys('create', '--json', '--history-size', '0', '--history-ttl', '90');
    const record = JSON.parse(created.stdout) as ApiKeyRecord;
    expect(await observer.keys.get(record.key)).toEqual({ ...record, history: { size: 0, ttlSeconds: 90 } });
    controls.length = 0;
    expect((await keys('history', record.key, '25', 'default')).result).toBe(0);
    expect((await observer.keys.get(record.key))?.history).toEqual({ size: 25 });
    await waitForControl(record.key);
    expect((await keys('list')).stdout).toMatch(new RegExp(`${record.key} .* size=25 ttl=120s `));
    await keys('delete', record.key);
  });

  test('keys create --app-id and keys app-id store the app id in Redis and announce it', async () => {
    const record = JSON.parse((await keys('create', '--json', '--app-id', '1234567')).stdout) as ApiKeyRecord;
    expect(await observer.keys.get(record.key)).toEqual({ ...record, appId: '1234567' });
    controls.length = 0;
    expect((await keys('app-id', record.key, 'default')).result).toBe(0);
    expect(await observer.keys.get(record.key)).not.toHaveProperty('appId');
    await waitForControl(record.key);
    expect((await keys('list')).stdout).toContain(`${record.key}  ${record.key} (default)`);
    await keys('delete', record.key);
  });

  test('a key created on Redis opens the account API started against the same Redis', async () => {
    const record = JSON.parse((await keys('create', '--json')).stdout) as ApiKeyRecord;
    const running = await startAccountApiProcess({ ...env, ACCOUNT_PORT: '0', HOST: '127.0.0.1' });
    if (typeof running === 'number') throw new Error(`exit ${running}`);
    try {
      const url = `http://127.0.0.1:${running.port}/api/connections/sum`;
      const res = await fetch(url, { headers: { key: record.key, secret: record.secret } });
      expect(await res.json()).toEqual({ connection_count: 0 });
      await keys('delete', record.key);
      expect((await fetch(url, { headers: { key: record.key, secret: record.secret } })).status).toBe(401);
    } finally {
      await running.stop();
    }
  });

  test('SWITCHBOARD_KEYS are upserted into Redis at start', async () => {
    const seed = {
      key: `seed-${randomBytes(3).toString('hex')}`,
      secret: 'seeded-secret',
      domains: ['example.com'],
    };
    const running = await startAccountApiProcess({
      ...env,
      ACCOUNT_PORT: '0',
      HOST: '127.0.0.1',
      SWITCHBOARD_KEYS: JSON.stringify([seed]),
    });
    if (typeof running === 'number') throw new Error(`exit ${running}`);
    await running.stop();
    expect(await observer.keys.get(seed.key)).toMatchObject({
      ...seed,
      clientMessages: true,
      forceAuth: false,
    });
    await waitForControl(seed.key);
  });

  test('Redis down: the command fails with exit 1 and a message', async () => {
    const dead = { ...env, REDIS_URL: 'redis://user:hunter2@127.0.0.1:1' };
    const { result, stderr } = await captured(() => runKeys(['list'], dead));
    expect(result).toBe(1);
    expect(stderr.trim()).toBe('Cannot reach Redis at 127.0.0.1:1; nothing was changed');
  });
});

describe('switchboard keys on Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  let clusterEnv: Record<string, string>;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    clusterEnv = {
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      REDIS_PREFIX: `cli-${randomBytes(4).toString('hex')}`,
      LOG_LEVEL: 'silent',
    };
  }, 30_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  test('create, domains, list and delete', async () => {
    const run = (...argv: string[]) => captured(() => runKeys(argv, clusterEnv));
    const record = JSON.parse((await run('create', '--json')).stdout) as ApiKeyRecord;
    expect((await run('domains', record.key, 'example.com')).result).toBe(0);
    const listed = JSON.parse((await run('list', '--json')).stdout) as ApiKeyRecord[];
    expect(listed).toEqual([
      {
        key: record.key,
        domains: ['example.com'],
        clientMessages: true,
        forceAuth: false,
        createdAt: record.createdAt,
      },
    ]);
    expect((await run('delete', record.key)).result).toBe(0);
    expect(JSON.parse((await run('list', '--json')).stdout)).toEqual([]);
  });
});
