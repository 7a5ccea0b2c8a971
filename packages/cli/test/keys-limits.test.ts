import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiKeyRecord } from '@switchboard/core';
import { runKeys } from '../src/commands/keys';
import { captured, tempDataDir } from './run-captured';

let data: ReturnType<typeof tempDataDir>;
let env: Record<string, string>;

beforeEach(() => {
  data = tempDataDir();
  env = { SWITCHBOARD_DATA_DIR: data.dir, LOG_LEVEL: 'silent', MAX_CONNECTIONS_PER_KEY: '500' };
});
afterEach(() => data.cleanup());

const keys = (...argv: string[]) => captured(() => runKeys(argv, env));
const stored = (): ApiKeyRecord =>
  (JSON.parse(readFileSync(join(data.dir, 'keys.json'), 'utf8')) as ApiKeyRecord[])[0]!;

describe('keys limits', () => {
  test('sets, keeps, shows and drops a key’s quotas', async () => {
    const created = JSON.parse((await keys('create', '--json')).stdout) as ApiKeyRecord;
    const set = await keys('limits', created.key, '--connections', '1000', '--messages-per-day=0');
    expect(set.result).toBe(0);
    expect(set.stdout.trim()).toBe(
      `Limits of ${created.key}: connections=1000 apiRequestsPerSecond=unlimited (default) publishesPerSecond=unlimited (default) messagesPerDay=unlimited`,
    );
    expect(stored().limits).toEqual({ connections: 1000, messagesPerDay: 0 });

    await keys('limits', created.key, '--publishes-per-second', '50');
    expect(stored().limits).toEqual({ connections: 1000, messagesPerDay: 0, publishesPerSecond: 50 });

    const shown = await keys('limits', created.key, '--json');
    expect(JSON.parse(shown.stdout)).toMatchObject({ limits: stored().limits });
    expect(JSON.parse(shown.stdout)).not.toHaveProperty('secret');

    await keys('limits', created.key, '--connections', 'default', '--messages-per-day', 'default');
    await keys('limits', created.key, '--publishes-per-second', 'default');
    expect(stored()).not.toHaveProperty('limits');
    expect((await keys('limits', created.key)).stdout).toMatch(/connections=500 \(default\)/);
  });

  test('refuses a value that is not a whole number, naming the option, before touching the store', async () => {
    const created = JSON.parse((await keys('create', '--json')).stdout) as ApiKeyRecord;
    const bad = await keys('limits', created.key, '--api-requests-per-second', '-3');
    expect(bad.result).toBe(2);
    expect(bad.stderr.split('\n')[0]).toBe(
      '--api-requests-per-second must be a whole number (0: unlimited) or "default", got "-3"',
    );
    expect(stored()).not.toHaveProperty('limits');
    expect((await keys('limits', 'nope', '--connections', '1')).result).toBe(1);
  });
});
