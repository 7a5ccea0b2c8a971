import { mkdtempSync, rmSync } from 'node:fs';
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
