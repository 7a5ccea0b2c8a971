import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryKeyStore } from '../src/keys/key-store-memory';
import { describeKeyStoreContract } from './contracts/key-store.contract';

describeKeyStoreContract('memory', async () => new MemoryKeyStore());

describe('MemoryKeyStore with a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-keys-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  describeKeyStoreContract(
    'memory, file-backed',
    async () => new MemoryKeyStore(join(dir, `keys-${n++}.json`)),
  );
});

describe('MemoryKeyStore keys file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-keys-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const legacy = {
    key: 'legacy',
    secret: 'legacy-secret',
    domains: ['example.com'],
    clientMessages: true,
    forceAuth: false,
    createdAt: '2026-01-01T00:00:00.000Z',
  };

  it('reads a file written before app ids: its records have none', async () => {
    const file = join(dir, 'legacy.json');
    writeFileSync(file, JSON.stringify([legacy]));
    const store = new MemoryKeyStore(file);
    expect(await store.list()).toEqual([legacy]);
    await store.put({ ...legacy, appId: '42' });
    expect(await new MemoryKeyStore(file).get('legacy')).toEqual({ ...legacy, appId: '42' });
  });

  it('refuses a file with an invalid appId as damaged, naming the entry', async () => {
    const file = join(dir, 'damaged.json');
    writeFileSync(file, JSON.stringify([legacy, { ...legacy, key: 'other', appId: 7 }]));
    await expect(new MemoryKeyStore(file).list()).rejects.toThrow('entry 2 has an invalid "appId"');
  });
});
