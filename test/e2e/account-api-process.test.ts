import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSwitchboardProcess } from '@switchboard/harness';
import type { SwitchboardProcess } from '@switchboard/harness';

/** The built `switchboard` binary: `keys` and `account-api` as an operator runs them. */

const dataDir = mkdtempSync(join(tmpdir(), 'sb-account-'));
const env = { ACCOUNT_PORT: '0', HOST: '127.0.0.1', SWITCHBOARD_DATA_DIR: dataDir };
const running: SwitchboardProcess[] = [];

const run = (args: string[], extra: Record<string, string> = {}): SwitchboardProcess => {
  const proc = startSwitchboardProcess(args, { ...env, ...extra });
  running.push(proc);
  return proc;
};

afterAll(() => {
  for (const proc of running) proc.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('switchboard keys and account-api processes', () => {
  it('creates a key, serves it, and exits 0 on SIGTERM', async () => {
    const create = run(['keys', 'create', '--json', '--domain', 'example.com']);
    expect((await create.exited).code).toBe(0);
    const record = JSON.parse(create.lines.join('\n')) as { key: string; secret: string };

    const list = run(['keys', 'list']);
    expect((await list.exited).code).toBe(0);
    expect(list.lines.join('\n')).toContain(record.key);
    expect(list.lines.join('\n')).not.toContain(record.secret);

    const service = run(['account-api'], {
      SWITCHBOARD_KEYS: JSON.stringify([{ key: 'seeded', secret: 'seeded-secret' }]),
    });
    const ready = await service.waitForLog({ msg: 'ready', service: 'account-api' });
    const base = `http://127.0.0.1:${Number(ready['port'])}`;
    const domains = await fetch(`${base}/api/domains`, {
      headers: { key: record.key, secret: record.secret },
    });
    expect(await domains.json()).toEqual(['example.com']);
    const seeded = await fetch(`${base}/api/domains`, {
      headers: { key: 'seeded', secret: 'seeded-secret' },
    });
    expect(seeded.status).toBe(200);
    expect(service.lines.some((line) => line.includes('seeded-secret') || line.includes(record.secret))).toBe(
      false,
    );

    service.kill('SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });

  it('bad usage exits 2 and an invalid configuration exits 1', async () => {
    const usage = run(['keys', 'rotate']);
    expect((await usage.exited).code).toBe(2);
    const config = run(['account-api'], { ACCOUNT_PORT: 'nope' });
    expect((await config.exited).code).toBe(1);
    expect(config.lines.some((line) => line.startsWith('ACCOUNT_PORT: '))).toBe(true);
  });
});
