import { generateKeyRecord } from '../../src/keys/key-store';
import { InvalidDomainError } from '../../src/names/domain';
import { InvalidAppIdError, appIdOf } from '../../src/names/app-id';
import type { ApiKeyRecord, KeyStore } from '../../src/keys/key-store';

/** The KeyStore port's contract (key-store.ts); each `createStore()` starts empty. */
export function describeKeyStoreContract(name: string, createStore: () => Promise<KeyStore>): void {
  describe(`KeyStore contract: ${name}`, () => {
    let store: KeyStore;

    beforeEach(async () => {
      store = await createStore();
    });

    it('stores, replaces and deletes records', async () => {
      const record: ApiKeyRecord = {
        ...generateKeyRecord({ domains: ['example.com', 'a.test'] }),
        forceAuth: true,
      };
      expect(await store.get(record.key)).toBeNull();
      await store.put(record);
      expect(await store.get(record.key)).toEqual(record);
      const replaced: ApiKeyRecord = { ...record, domains: [], clientMessages: false, forceAuth: false };
      await store.put(replaced);
      expect(await store.get(record.key)).toEqual(replaced);
      expect(await store.delete(record.key)).toBe(true);
      expect(await store.delete(record.key)).toBe(false);
      expect(await store.get(record.key)).toBeNull();
    });

    it('keeps a history override, whole or partial, and drops it when a record comes without', async () => {
      const whole: ApiKeyRecord = { ...generateKeyRecord(), history: { size: 0, ttlSeconds: 3600 } };
      const partial: ApiKeyRecord = { ...generateKeyRecord(), history: { ttlSeconds: 5 } };
      await store.put(whole);
      await store.put(partial);
      expect(await store.get(whole.key)).toEqual(whole);
      expect(await store.get(partial.key)).toEqual(partial);
      expect((await store.list()).find((r) => r.key === whole.key)).toEqual(whole);
      const plain = (({ history: _history, ...rest }: ApiKeyRecord): ApiKeyRecord => rest)(whole);
      await store.put(plain);
      expect(await store.get(whole.key)).toEqual(plain);
      expect(await store.get(whole.key)).not.toHaveProperty('history');
    });

    it('keeps a webhook, with or without its events, and drops it when a record comes without', async () => {
      const all: ApiKeyRecord = { ...generateKeyRecord(), webhook: { url: 'https://b.example/hook' } };
      const some: ApiKeyRecord = {
        ...generateKeyRecord(),
        webhook: { url: 'http://b.example:8080/h?x=1', events: ['client_event', 'member_added'] },
      };
      await store.put(all);
      await store.put(some);
      await store.put(generateKeyRecord());
      expect(await store.get(all.key)).toEqual(all);
      expect(await store.listWebhooks()).toEqual([all, some].sort((a, b) => (a.key < b.key ? -1 : 1)));
      expect((await store.list()).find((r) => r.key === some.key)).toEqual(some);
      const plain = (({ webhook: _webhook, ...rest }: ApiKeyRecord): ApiKeyRecord => rest)(some);
      await store.put(plain);
      expect(await store.get(some.key)).not.toHaveProperty('webhook');
      await store.delete(all.key);
      expect(await store.listWebhooks()).toEqual([]);
    });

    it('keeps an app id, and drops it when a record comes without (the key is then the app id)', async () => {
      const digits: ApiKeyRecord = generateKeyRecord({ appId: '1234567' });
      const token: ApiKeyRecord = { ...generateKeyRecord(), appId: 'my-app_2' };
      await store.put(digits);
      await store.put(token);
      expect(await store.get(digits.key)).toEqual(digits);
      expect((await store.list()).find((r) => r.key === token.key)).toEqual(token);
      expect(appIdOf((await store.get(token.key))!)).toBe('my-app_2');
      const plain = (({ appId: _appId, ...rest }: ApiKeyRecord): ApiKeyRecord => rest)(digits);
      await store.put(plain);
      const read = await store.get(digits.key);
      expect(read).toEqual(plain);
      expect(read).not.toHaveProperty('appId');
      expect(appIdOf(read!)).toBe(digits.key);
    });

    it('keeps subscription counting when on, and drops it when a record comes without', async () => {
      const on: ApiKeyRecord = generateKeyRecord({ subscriptionCount: true });
      await store.put(on);
      expect(await store.get(on.key)).toEqual(on);
      expect((await store.list()).find((r) => r.key === on.key)?.subscriptionCount).toBe(true);
      const off = (({ subscriptionCount: _on, ...rest }: ApiKeyRecord): ApiKeyRecord => rest)(on);
      await store.put(off);
      expect(await store.get(on.key)).toEqual(off);
      expect(await store.get(on.key)).not.toHaveProperty('subscriptionCount');
      expect(generateKeyRecord()).not.toHaveProperty('subscriptionCount');
    });

    it('refuses a record with an invalid app id, naming it, and stores nothing', async () => {
      for (const appId of ['', 'a/b', 'app id', 'x'.repeat(129)]) {
        const record = generateKeyRecord({ appId });
        await expect(store.put(record)).rejects.toThrow(InvalidAppIdError);
        expect(await store.get(record.key)).toBeNull();
      }
      await expect(store.put(generateKeyRecord({ appId: 'a/b' }))).rejects.toThrow('"a/b" is not an app id');
    });

    it('lists every record ordered by key', async () => {
      const records = ['k-b', 'k-c', 'k-a', 'K-z'].map((key) => ({ ...generateKeyRecord(), key }));
      for (const r of records) await store.put(r);
      await store.delete('k-c');
      expect((await store.list()).map((r) => r.key)).toEqual(['K-z', 'k-a', 'k-b']);
      expect(await store.list()).toEqual([records[3], records[2], records[0]]);
    });

    it('refuses a record with an invalid domain, naming it, and stores nothing', async () => {
      const record = generateKeyRecord({ domains: ['example.com', 'https://example.org'] });
      await expect(store.put(record)).rejects.toThrow(InvalidDomainError);
      await expect(store.put(record)).rejects.toThrow('"https://example.org" is not a domain');
      expect(await store.get(record.key)).toBeNull();
    });
  });
}
