import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSwitchboardProcess } from '@switchboard/harness';
import type { SwitchboardProcess } from '@switchboard/harness';

/**
 * What the built `switchboard` binary refuses, as an operator sees it: domains that are not
 * domains, and keys that are published placeholders.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'sb-refusals-'));
const env = { PORT: '0', ACCOUNT_PORT: '0', HOST: '127.0.0.1', SWITCHBOARD_DATA_DIR: dataDir };
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

const K8S_KEYS = /SWITCHBOARD_KEYS: '(.*)'/.exec(
  readFileSync(join(__dirname, '..', '..', 'k8s', 'secret.yaml'), 'utf8'),
)?.[1];
const DEV_KEYS = /^SWITCHBOARD_KEYS='(.*)'$/m.exec(
  readFileSync(join(__dirname, '..', '..', '.env'), 'utf8'),
)?.[1];

describe('allowed domains', () => {
  it.each([
    [['create', '--domain', 'https://example.com'], '"https://example.com" is not a domain: drop the scheme'],
    [['create', '--domain=example.com/app'], '"example.com/app" is not a domain: drop the path'],
    [['create', '--domain', '*.example.com'], '"*.example.com" is not a domain: no wildcards'],
    [['create', '--domain', 'example .com'], '"example .com" is not a domain: it contains whitespace'],
    [['create', '--domain', ''], 'an empty domain is not allowed'],
    [['domains', 'some-key', 'ok.example', 'http://x.example'], '"http://x.example" is not a domain'],
  ])('keys %j exits 2 naming the bad value', async (args, message) => {
    const proc = run(['keys', ...args]);
    expect((await proc.exited).code).toBe(2);
    expect(proc.lines[0]?.slice(0, message.length)).toBe(message);
    expect(proc.lines[0]).toContain('give a host such as example.com or example.com:8443');
  });

  it('keys create takes a domain with a port', async () => {
    const proc = run(['keys', 'create', '--json', '--domain', 'LocalHost:3000']);
    expect((await proc.exited).code).toBe(0);
    expect(JSON.parse(proc.lines.join('\n'))).toMatchObject({ domains: ['localhost:3000'] });
  });

  it('a gateway with an invalid domain in SWITCHBOARD_KEYS exits 1 with one line naming it', async () => {
    const keys = JSON.stringify([
      { key: 'k1', secret: 'a-real-secret-1', domains: ['example.com', 'https://x.io'] },
    ]);
    const proc = run(['gateway'], { SWITCHBOARD_KEYS: keys });
    expect((await proc.exited).code).toBe(1);
    expect(proc.lines.filter(Boolean)).toEqual([
      expect.stringMatching(
        /^SWITCHBOARD_KEYS\.0\.domains\.1: "https:\/\/x\.io" is not a domain: drop the scheme/,
      ),
    ]);
  });
});

describe('placeholder keys', () => {
  it.each([['gateway'], ['account-api'], ['start']])(
    '%s refuses the key of k8s/secret.yaml: exit 1, one line saying what to do',
    async (command) => {
      expect(K8S_KEYS).toContain('CHANGE-ME');
      const proc = run([command], { SWITCHBOARD_KEYS: K8S_KEYS! });
      expect((await proc.exited).code).toBe(1);
      expect(proc.lines.filter(Boolean)).toEqual([
        'SWITCHBOARD_KEYS.0: key "CHANGE-ME-key" has a placeholder name from the examples (k8s/secret.yaml, docs); ' +
          'replace key and secret with your own, e.g. a secret from `openssl rand -hex 32`',
      ]);
    },
  );

  it('refuses a real key name with a placeholder secret, without printing the secret', async () => {
    const secret = 'please-CHANGEME-now';
    const proc = run(['gateway'], { SWITCHBOARD_KEYS: JSON.stringify([{ key: 'prod', secret }]) });
    expect((await proc.exited).code).toBe(1);
    expect(proc.lines.filter(Boolean)).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0: key "prod" has a placeholder secret from the examples/),
    ]);
    expect(proc.lines.join('\n')).not.toContain(secret);
  });

  it('refuses the development key of .env unless SWITCHBOARD_ALLOW_DEV_KEYS=1', async () => {
    expect(DEV_KEYS).toContain('dev-key');
    const refused = run(['gateway'], { SWITCHBOARD_KEYS: DEV_KEYS! });
    expect((await refused.exited).code).toBe(1);
    expect(refused.lines.filter(Boolean)).toEqual([
      'SWITCHBOARD_KEYS.0: key "dev-key" is the public development key of .env; set SWITCHBOARD_KEYS to a key ' +
        'and secret of your own (or SWITCHBOARD_ALLOW_DEV_KEYS=1 on a development machine)',
    ]);

    const allowed = run(['gateway'], { SWITCHBOARD_KEYS: DEV_KEYS!, SWITCHBOARD_ALLOW_DEV_KEYS: '1' });
    expect(await allowed.waitForLog({ msg: 'ready' })).toMatchObject({ engine: 'memory' });
    allowed.kill('SIGKILL');
  });
});
