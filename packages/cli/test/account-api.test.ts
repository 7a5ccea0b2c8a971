import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAccountApi, startAccountApiProcess } from '../src/commands/account-api';
import type { AccountApiProcess } from '../src/commands/account-api';
import { captured, tempDataDir } from './run-captured';

const SEED = { key: 'seeded-key', secret: 'seeded-secret-123', domains: ['example.com'] };

let data: ReturnType<typeof tempDataDir>;
let env: Record<string, string>;

beforeEach(() => {
  data = tempDataDir();
  env = {
    SWITCHBOARD_DATA_DIR: data.dir,
    ACCOUNT_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    SWITCHBOARD_KEYS: JSON.stringify([SEED]),
  };
});
afterEach(() => data.cleanup());

async function start(): Promise<AccountApiProcess> {
  const started = await startAccountApiProcess(env);
  if (typeof started === 'number') throw new Error(`exit ${started}`);
  return started;
}

describe('switchboard account-api', () => {
  test('serves the seeded keys on ACCOUNT_PORT', async () => {
    const running = await start();
    try {
      const res = await fetch(`http://127.0.0.1:${running.port}/api/domains`, {
        headers: { key: SEED.key, secret: SEED.secret },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(['example.com']);
      const stored = JSON.parse(readFileSync(join(data.dir, 'keys.json'), 'utf8')) as Array<{ key: string }>;
      expect(stored.map((r) => r.key)).toEqual([SEED.key]);
    } finally {
      await running.stop();
    }
  });

  test('a restart with changed seeds updates the key', async () => {
    await (await start()).stop();
    env.SWITCHBOARD_KEYS = JSON.stringify([{ ...SEED, secret: 'rotated-secret-456', domains: [] }]);
    const running = await start();
    try {
      const base = `http://127.0.0.1:${running.port}/api/domains`;
      expect((await fetch(base, { headers: { key: SEED.key, secret: SEED.secret } })).status).toBe(401);
      const res = await fetch(base, { headers: { key: SEED.key, secret: 'rotated-secret-456' } });
      expect(await res.json()).toEqual([]);
    } finally {
      await running.stop();
    }
  });

  test('an invalid configuration is exit 1 with one line per problem', async () => {
    env = { ...env, ACCOUNT_PORT: '99999', SWITCHBOARD_KEYS: '[{"key":"x"}]' };
    const { result, stderr } = await captured(() => runAccountApi(env));
    expect(result).toBe(1);
    const lines = stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ACCOUNT_PORT: /);
    expect(lines.slice(1).every((line) => line.startsWith('SWITCHBOARD_KEYS'))).toBe(true);
  });

  test('a taken port is exit 1 with one line naming the port and the fix', async () => {
    const first = await start();
    try {
      const { result, stderr } = await captured(() =>
        startAccountApiProcess({ ...env, ACCOUNT_PORT: String(first.port) }),
      );
      expect(result).toBe(1);
      expect(stderr).toBe(
        `port ${first.port} (ACCOUNT_PORT) is already in use on 127.0.0.1: stop the other process or set ACCOUNT_PORT\n`,
      );
    } finally {
      await first.stop();
    }
  });

  test('SIGTERM stops the service and exits 0', async () => {
    const before = new Set(process.listeners('SIGTERM'));
    const beforeInt = new Set(process.listeners('SIGINT'));
    const exited = new Promise<number | undefined>((resolve) => {
      jest
        .spyOn(process, 'exit')
        .mockImplementation(((code?: number) => resolve(code)) as typeof process.exit);
    });
    try {
      expect(await runAccountApi(env)).toBeUndefined();
      const added = process.listeners('SIGTERM').filter((l) => !before.has(l));
      expect(added).toHaveLength(1);
      process.emit('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      for (const listener of process.listeners('SIGINT').filter((l) => !beforeInt.has(l))) {
        process.off('SIGINT', listener);
      }
      jest.restoreAllMocks();
    }
  });
});
