import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  loadConfig,
  MemoryBroker,
} from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { createAccountApi } from '@switchboard/account-api';
import { runKeys } from '../src/commands/keys';
import { captured, tempDataDir } from './run-captured';

let data: ReturnType<typeof tempDataDir>;
let env: Record<string, string>;

beforeEach(() => {
  data = tempDataDir();
  env = { SWITCHBOARD_DATA_DIR: data.dir, LOG_LEVEL: 'silent' };
});
afterEach(() => data.cleanup());

const keys = (...argv: string[]) => captured(() => runKeys(argv, env));
const storedKeys = (): ApiKeyRecord[] =>
  JSON.parse(readFileSync(join(data.dir, 'keys.json'), 'utf8')) as ApiKeyRecord[];

async function createKey(...options: string[]): Promise<ApiKeyRecord> {
  const { result, stdout } = await keys('create', '--json', ...options);
  expect(result).toBe(0);
  return JSON.parse(stdout) as ApiKeyRecord;
}

describe('keys create', () => {
  test('prints a new random, URL-safe key and secret and stores them', async () => {
    const { result, stdout, stderr } = await keys('create');
    expect(result).toBe(0);
    expect(stderr).toBe('');
    const key = /^key: +(\S+)$/m.exec(stdout)?.[1];
    const secret = /^secret: +(\S+)$/m.exec(stdout)?.[1];
    expect(key).toMatch(/^[A-Za-z0-9_-]{16,}$/);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(stdout).toMatch(/^domains: +\(any origin\)$/m);
    expect(stdout).toMatch(/^options: +clientMessages=true forceAuth=false$/m);
    expect(storedKeys()).toEqual([expect.objectContaining({ key, secret, domains: [] })]);
    expect(statSync(join(data.dir, 'keys.json')).mode & 0o777).toBe(0o600);
  });

  test('takes domains and options', async () => {
    const record = await createKey(
      '--domain',
      'Example.com',
      '--domain=app.example.org:8443',
      '--no-client-messages',
      '--force-auth',
    );
    expect(record).toMatchObject({
      domains: ['example.com', 'app.example.org:8443'],
      clientMessages: false,
      forceAuth: true,
    });
    expect(storedKeys()[0]).toEqual(record);
  });

  test('two keys never collide', async () => {
    const a = await createKey();
    const b = await createKey();
    expect(a.key).not.toBe(b.key);
    expect(a.secret).not.toBe(b.secret);
    expect(storedKeys()).toHaveLength(2);
  });

  test('announces the key so gateways drop cached records', async () => {
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl');
    try {
      const record = await createKey();
      expect(publish).toHaveBeenCalledWith({ type: 'key-changed', key: record.key });
    } finally {
      publish.mockRestore();
    }
  });

  test('a failed announcement in memory mode is ignored', async () => {
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl').mockRejectedValue(new Error('down'));
    try {
      const { result, stderr } = await keys('create');
      expect(result).toBe(0);
      expect(stderr).toBe('');
    } finally {
      publish.mockRestore();
    }
  });

  test('a created key opens the account API', async () => {
    const record = await createKey('--domain', 'example.com');
    const config = loadConfig(env);
    const engine = createMemoryEngine(createMemoryState({ keysFile: join(data.dir, 'keys.json') }));
    const app = createAccountApi({ engine, logger: createLogger({ level: 'silent' }), config });
    await request(app)
      .get('/api/domains')
      .set({ key: record.key, secret: record.secret })
      .expect(200, ['example.com']);
  });
});

describe('keys list', () => {
  test('shows key, domains, options and creation time, never the secret', async () => {
    const a = await createKey('--domain', 'example.com', '--domain', 'example.org');
    const b = await createKey('--force-auth');
    const { result, stdout } = await keys('list');
    expect(result).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY +APP ID +DOMAINS +OPTIONS +HISTORY +CREATED$/);
    expect(lines).toHaveLength(3);
    expect(stdout).toContain(a.key);
    expect(stdout).toContain('example.com,example.org');
    expect(stdout).toContain('(any origin)');
    expect(stdout).toContain('forceAuth=true');
    expect(stdout).toContain(b.createdAt);
    expect(stdout).not.toContain(a.secret);
    expect(stdout).not.toContain(b.secret);
  });

  test('--show-secrets shows them', async () => {
    const a = await createKey();
    const { stdout } = await keys('list', '--show-secrets');
    expect(stdout).toMatch(/^KEY +SECRET +APP ID +DOMAINS/);
    expect(stdout).toContain(a.secret);
  });

  test('--json lists records without secrets', async () => {
    const a = await createKey('--domain', 'example.com');
    const { stdout } = await keys('list', '--json');
    expect(JSON.parse(stdout)).toEqual([
      {
        key: a.key,
        domains: ['example.com'],
        clientMessages: true,
        forceAuth: false,
        createdAt: a.createdAt,
      },
    ]);
  });

  test('--json --show-secrets includes them', async () => {
    const a = await createKey();
    const { stdout } = await keys('list', '--json', '--show-secrets');
    expect(JSON.parse(stdout)).toEqual([a]);
  });

  test('says how to create a key when there is none', async () => {
    const { result, stdout } = await keys('list');
    expect(result).toBe(0);
    expect(stdout).toMatch(/No API keys/);
    expect(JSON.parse((await keys('list', '--json')).stdout)).toEqual([]);
  });
});

describe('keys delete', () => {
  test('deletes a key and announces it', async () => {
    const a = await createKey();
    const b = await createKey();
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl');
    try {
      const { result, stdout } = await keys('delete', a.key);
      expect(result).toBe(0);
      expect(stdout).toContain(`Deleted API key ${a.key}`);
      expect(publish).toHaveBeenCalledWith({ type: 'key-changed', key: a.key });
    } finally {
      publish.mockRestore();
    }
    expect(storedKeys().map((r) => r.key)).toEqual([b.key]);
  });

  test('an unknown key is exit 1 with a message', async () => {
    const { result, stdout, stderr } = await keys('delete', 'nope');
    expect(result).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/Unknown API key "nope"/);
  });

  test('--json', async () => {
    const a = await createKey();
    expect(JSON.parse((await keys('delete', a.key, '--json')).stdout)).toEqual({ deleted: a.key });
  });
});

describe('keys domains', () => {
  test('replaces the domain list', async () => {
    const a = await createKey('--domain', 'old.example');
    const { result, stdout } = await keys('domains', a.key, 'example.com', 'Example.org', 'example.com');
    expect(result).toBe(0);
    expect(stdout).toContain(`Domains of ${a.key}: example.com,example.org`);
    expect(storedKeys()[0]).toEqual({ ...a, domains: ['example.com', 'example.org'] });
  });

  test('no domain allows any origin', async () => {
    const a = await createKey('--domain', 'example.com');
    const { result, stdout } = await keys('domains', a.key);
    expect(result).toBe(0);
    expect(stdout).toContain('(any origin)');
    expect(storedKeys()[0]?.domains).toEqual([]);
  });

  test('--json prints the record without its secret', async () => {
    const a = await createKey();
    const { stdout } = await keys('domains', a.key, 'example.com', '--json');
    expect(JSON.parse(stdout)).toEqual({
      key: a.key,
      domains: ['example.com'],
      clientMessages: true,
      forceAuth: false,
      createdAt: a.createdAt,
    });
  });

  test('an unknown key is exit 1', async () => {
    const { result, stderr } = await keys('domains', 'nope', 'example.com');
    expect(result).toBe(1);
    expect(stderr).toMatch(/Unknown API key "nope"/);
  });
});

describe('history retention', () => {
  test('keys create takes a size and a TTL, each optional, and stores them with the key', async () => {
    const both = await createKey('--history-size', '0', '--history-ttl=3600');
    expect(both.history).toEqual({ size: 0, ttlSeconds: 3600 });
    const ttlOnly = await createKey('--history-ttl', '30');
    expect(ttlOnly.history).toEqual({ ttlSeconds: 30 });
    const plain = await createKey();
    expect(plain).not.toHaveProperty('history');
    expect(storedKeys()).toEqual([both, ttlOnly, plain]);
    const { stdout } = await keys('create', '--history-size', '10');
    expect(stdout).toMatch(/^history: +size=10 ttl=120s$/m);
  });

  test("keys list shows each key's retention, marking the configured one", async () => {
    env = { ...env, HISTORY_SIZE: '50' };
    const custom = await createKey('--history-size', '7');
    const plain = await createKey();
    const { stdout } = await keys('list');
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY +APP ID +DOMAINS +OPTIONS +HISTORY +CREATED$/);
    expect(lines.find((line) => line.startsWith(custom.key))).toMatch(/ size=7 ttl=120s +\d{4}-/);
    expect(lines.find((line) => line.startsWith(plain.key))).toMatch(/ size=50 ttl=120s \(default\) +\d{4}-/);
    const listed = JSON.parse((await keys('list', '--json')).stdout) as ApiKeyRecord[];
    expect(listed.find((r) => r.key === custom.key)?.history).toEqual({ size: 7 });
  });

  test("keys history sets, partly resets and drops a key's override, and announces it", async () => {
    const a = await createKey();
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl');
    try {
      const { result, stdout } = await keys('history', a.key, '0', '600');
      expect(result).toBe(0);
      expect(stdout).toContain(`History of ${a.key}: size=0 ttl=600s`);
      expect(publish).toHaveBeenCalledWith({ type: 'key-changed', key: a.key });
    } finally {
      publish.mockRestore();
    }
    expect(storedKeys()[0]).toEqual({ ...a, history: { size: 0, ttlSeconds: 600 } });
    const partly = await keys('history', a.key, 'default', '60', '--json');
    expect(JSON.parse(partly.stdout)).toMatchObject({ key: a.key, history: { ttlSeconds: 60 } });
    expect(JSON.parse(partly.stdout)).not.toHaveProperty('secret');
    expect(storedKeys()[0]?.history).toEqual({ ttlSeconds: 60 });
    const dropped = await keys('history', a.key, 'default', 'default');
    expect(dropped.stdout).toContain('size=100 ttl=120s (default)');
    expect(storedKeys()[0]).toEqual(a);
  });

  test('keys history of an unknown key is exit 1', async () => {
    const { result, stderr } = await keys('history', 'nope', '10', '10');
    expect(result).toBe(1);
    expect(stderr).toMatch(/Unknown API key "nope"/);
  });

  test.each([
    [['create', '--history-size', '-1']],
    [['create', '--history-size', '10001']],
    [['create', '--history-size', 'default']],
    [['create', '--history-ttl', '0']],
    [['create', '--history-ttl', '1.5']],
    [['create', '--history-ttl']],
    [['history', 'key', '10']],
    [['history', 'key', '10', '10', '10']],
    [['history', 'key', 'ten', '10']],
    [['history', 'key', '10', '0']],
  ])('keys %j is exit 2 naming the bad value, and stores nothing', async (argv) => {
    const { result, stdout, stderr } = await keys(...argv);
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(/history|needs a value/);
    expect(() => statSync(join(data.dir, 'keys.json'))).toThrow();
  });
});

describe('keys app-id', () => {
  test('keys create takes an app id and stores it; without one the key is the app id', async () => {
    const { result, stdout } = await keys('create', '--app-id', '1234567');
    expect(result).toBe(0);
    expect(stdout).toMatch(/^app id: +1234567$/m);
    const key = /^key: +(\S+)$/m.exec(stdout)?.[1];
    expect(storedKeys()).toEqual([expect.objectContaining({ key, appId: '1234567' })]);
    const plain = await keys('create');
    const plainKey = /^key: +(\S+)$/m.exec(plain.stdout)?.[1] ?? '';
    expect(plain.stdout).toContain(`app id:   ${plainKey} (default)`);
    expect(storedKeys().find((r) => r.key === plainKey)).not.toHaveProperty('appId');
    expect((await createKey('--app-id=my-app')).appId).toBe('my-app');
    expect(await createKey('--app-id', 'default')).not.toHaveProperty('appId');
  });

  test("keys list shows each key's app id, marking the default", async () => {
    const a = await createKey('--app-id', '42');
    const b = await createKey();
    const { stdout } = await keys('list');
    const row = (key: string) => stdout.split('\n').find((line) => line.startsWith(key)) ?? '';
    expect(row(a.key)).toMatch(new RegExp(`^${a.key} +42 +\\(any origin\\)`));
    expect(row(b.key)).toContain(`${b.key}  ${b.key} (default)`);
    expect(JSON.parse((await keys('list', '--json')).stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ key: a.key, appId: '42' })]),
    );
  });

  test("keys app-id sets, changes and drops a key's app id, and announces it", async () => {
    const record = await createKey();
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl');
    try {
      const set = await keys('app-id', record.key, '1234567');
      expect(set.result).toBe(0);
      expect(set.stdout).toBe(`App id of ${record.key}: 1234567\n`);
      expect(storedKeys()[0]).toEqual({ ...record, appId: '1234567' });
      expect(publish).toHaveBeenCalledWith({ type: 'key-changed', key: record.key });
      const json = await keys('app-id', record.key, 'app_2', '--json');
      expect(JSON.parse(json.stdout)).toMatchObject({ key: record.key, appId: 'app_2' });
      expect(JSON.parse(json.stdout)).not.toHaveProperty('secret');
      const reset = await keys('app-id', record.key, 'default');
      expect(reset.stdout).toBe(`App id of ${record.key}: ${record.key} (default)\n`);
      expect(storedKeys()[0]).toEqual(record);
    } finally {
      publish.mockRestore();
    }
  });

  test('an unknown key is exit 1 and stores nothing', async () => {
    const { result, stderr } = await keys('app-id', 'nope', '42');
    expect(result).toBe(1);
    expect(stderr).toContain('Unknown API key "nope"');
    expect(() => statSync(join(data.dir, 'keys.json'))).toThrow();
  });

  test.each([
    [['create', '--app-id', 'a/b']],
    [['create', '--app-id', '']],
    [['create', '--app-id']],
    [['app-id', 'key']],
    [['app-id', 'key', 'my app']],
    [['app-id', 'key', 'x'.repeat(129)]],
    [['app-id', 'key', '1', '2']],
  ])('keys %j is exit 2 naming the problem, and stores nothing', async (argv) => {
    const { result, stdout, stderr } = await keys(...argv);
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(/app id|app-id/);
    expect(() => statSync(join(data.dir, 'keys.json'))).toThrow();
  });
});

describe('keys subscription-count', () => {
  test('keys create --subscription-count turns it on; without it the record has none', async () => {
    const { result, stdout } = await keys('create', '--subscription-count');
    expect(result).toBe(0);
    expect(stdout).toMatch(/^options: +clientMessages=true forceAuth=false subscriptionCount=true$/m);
    const key = /^key: +(\S+)$/m.exec(stdout)?.[1];
    expect(storedKeys()).toEqual([expect.objectContaining({ key, subscriptionCount: true })]);
    expect(await createKey()).not.toHaveProperty('subscriptionCount');
  });

  test("keys subscription-count turns a key's counting on and off, shows it in keys list, and announces it", async () => {
    const record = await createKey();
    const publish = jest.spyOn(MemoryBroker.prototype, 'publishControl');
    try {
      const on = await keys('subscription-count', record.key, 'on');
      expect(on.result).toBe(0);
      expect(on.stdout).toBe(`Subscription counting of ${record.key}: on\n`);
      expect(storedKeys()[0]).toEqual({ ...record, subscriptionCount: true });
      expect(publish).toHaveBeenCalledWith({ type: 'key-changed', key: record.key });
      expect((await keys('list')).stdout).toContain(
        'clientMessages=true forceAuth=false subscriptionCount=true',
      );
      const off = await keys('subscription-count', record.key, 'off', '--json');
      expect(JSON.parse(off.stdout)).not.toHaveProperty('subscriptionCount');
      expect(JSON.parse(off.stdout)).not.toHaveProperty('secret');
      expect(storedKeys()[0]).toEqual(record);
    } finally {
      publish.mockRestore();
    }
  });

  test('an unknown key is exit 1', async () => {
    const { result, stderr } = await keys('subscription-count', 'nope', 'on');
    expect(result).toBe(1);
    expect(stderr).toContain('Unknown API key "nope"');
  });

  test.each([
    [['subscription-count', 'key']],
    [['subscription-count', 'key', 'yes']],
    [['subscription-count', 'key', 'on', 'off']],
    [['create', '--subscription-count=on']],
  ])('keys %j is exit 2 naming the problem, and stores nothing', async (argv) => {
    const { result, stdout, stderr } = await keys(...argv);
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(/subscription-count/);
    expect(() => statSync(join(data.dir, 'keys.json'))).toThrow();
  });
});

describe('usage', () => {
  test.each([
    [[]],
    [['rotate']],
    [['toString']],
    [['create', 'extra']],
    [['create', '--domain']],
    [['create', '--domain', 'https://example.com']],
    [['create', '--domain', 'example.com/path']],
    [['create', '--domain', '*.example.com']],
    [['create', '--domain', '']],
    [['create', '--show-secrets']],
    [['create', '--force-auth=yes']],
    [['list', '--domain', 'x']],
    [['list', 'extra']],
    [['delete']],
    [['delete', 'a', 'b']],
    [['domains']],
    [['domains', 'key', 'not a domain']],
  ])('keys %j is exit 2 with the usage on stderr', async (argv) => {
    const { result, stdout, stderr } = await keys(...argv);
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('Usage: switchboard keys');
  });

  test('bad usage never touches the store', async () => {
    await keys('create', '--domain', 'https://example.com');
    expect(() => statSync(join(data.dir, 'keys.json'))).toThrow();
  });

  test.each([['help'], ['--help'], ['-h']])('keys %s prints the usage', async (flag) => {
    const { result, stdout } = await keys(flag);
    expect(result).toBe(0);
    expect(stdout).toContain('keys create [--domain D]...');
  });

  test('an invalid configuration is exit 1, one line per problem', async () => {
    env = { ...env, PORT: 'abc', REDIS_URL: 'http://nope' };
    const { result, stderr } = await keys('list');
    expect(result).toBe(1);
    expect(stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^PORT: /),
      expect.stringMatching(/^REDIS_URL: /),
    ]);
  });
});

describe('keys webhook', () => {
  test('sets a webhook, with the default or the given events, and removes it', async () => {
    const { key } = await createKey();
    const set = await keys('webhook', key, 'https://backend.example/hooks');
    expect(set.result).toBe(0);
    expect(set.stdout).toContain(
      'https://backend.example/hooks (channel_occupied,channel_vacated,member_added,member_removed)',
    );
    expect(storedKeys()[0]?.webhook).toEqual({ url: 'https://backend.example/hooks' });

    const some = await keys(
      'webhook',
      key,
      'http://127.0.0.1:9000/h',
      '--events',
      'client_event,member_added',
    );
    expect(some.result).toBe(0);
    expect(storedKeys()[0]?.webhook).toEqual({
      url: 'http://127.0.0.1:9000/h',
      events: ['client_event', 'member_added'],
    });

    const removed = await keys('webhook', key, '--remove', '--json');
    expect(removed.result).toBe(0);
    expect(JSON.parse(removed.stdout)).not.toHaveProperty('webhook');
    expect(storedKeys()[0]).not.toHaveProperty('webhook');
  });

  test.each([
    'http://127.0.0.1:9000/h',
    'http://localhost:9000/h',
    'http://[::1]/h',
    'https://169.254.169.254/latest',
    'http://10.1.2.3/h',
    'http://[fd00::1]/h',
    'http://100.64.0.1/h',
    'http://[::ffff:192.168.1.1]/h',
  ])('with WEBHOOK_DENY_PRIVATE=1, %s is refused with exit 1 naming the setting', async (url) => {
    const record = await createKey();
    env.WEBHOOK_DENY_PRIVATE = '1';
    const { result, stdout, stderr } = await keys('webhook', record.key, url);
    expect(result).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/loopback, link-local or private address, which WEBHOOK_DENY_PRIVATE refuses/);
    expect(storedKeys()[0]).toEqual(record);
    // Off (the default): a local receiver is fine.
    delete env.WEBHOOK_DENY_PRIVATE;
    expect((await keys('webhook', record.key, url)).result).toBe(0);
  });

  test('with WEBHOOK_DENY_PRIVATE=1, a name is refused on the addresses it resolves to', async () => {
    const record = await createKey();
    env.WEBHOOK_DENY_PRIVATE = '1';
    // The machine's own name resolves (through /etc/hosts, no network) to a loopback or private address.
    const { result, stderr } = await keys('webhook', record.key, `http://${hostname()}/h`);
    expect(result).toBe(1);
    expect(stderr).toMatch(/resolves to \S+, a loopback, link-local or private address/);
  });

  test('an unknown key is exit 1 and stores nothing', async () => {
    const { result, stderr } = await keys('webhook', 'nope', 'https://backend.example/hooks');
    expect(result).toBe(1);
    expect(stderr).toContain('Unknown API key "nope"');
  });

  test.each([
    [['webhook', 'KEY', 'ftp://backend.example/hooks'], /not a webhook URL/],
    [['webhook', 'KEY', 'backend.example/hooks'], /not a webhook URL/],
    [
      ['webhook', 'KEY', 'https://b.example', '--events', 'channel_full'],
      /"channel_full" is not a webhook event/,
    ],
    [['webhook', 'KEY', 'https://b.example', '--events', ','], /lists no event/],
    [['webhook', 'KEY', 'https://b.example', '--remove'], /takes no URL/],
    [['webhook', 'KEY'], /takes a KEY and a URL/],
    [['webhook', 'KEY', 'https://b.example', 'extra'], /takes a KEY and a URL/],
  ])('keys %j is exit 2 naming the problem, and changes nothing', async (argv, problem) => {
    const record = await createKey();
    const { result, stdout, stderr } = await keys(...argv.map((a) => (a === 'KEY' ? record.key : a)));
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.split('\n')[0]).toMatch(problem);
    expect(storedKeys()[0]).toEqual(record);
  });
});
