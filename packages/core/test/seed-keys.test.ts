import { MemoryKeyStore, seedKeys } from '../src';
import type { SeedKey } from '../src';

const seed = (overrides: Partial<SeedKey> = {}): SeedKey => ({
  key: 'seeded',
  secret: 'seeded-secret',
  domains: ['example.com'],
  clientMessages: true,
  forceAuth: false,
  subscriptionCount: false,
  ...overrides,
});

/** A seed as the store keeps it: `subscriptionCount` only when on. */
const stored = ({ subscriptionCount: _off, ...rest }: SeedKey): Omit<SeedKey, 'subscriptionCount'> => rest;

describe('seedKeys', () => {
  test('inserts new keys and reports them', async () => {
    const store = new MemoryKeyStore();
    const changed = await seedKeys(store, [seed(), seed({ key: 'other' })], new Date('2026-03-01T00:00:00Z'));
    expect(changed).toEqual(['seeded', 'other']);
    expect(await store.get('seeded')).toEqual({ ...stored(seed()), createdAt: '2026-03-01T00:00:00.000Z' });
  });

  test('replaces secret, domains and options of an existing key, keeping createdAt', async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed()], new Date('2026-03-01T00:00:00Z'));
    const update = seed({ secret: 'rotated-secret', domains: [], clientMessages: false, forceAuth: true });
    expect(await seedKeys(store, [update], new Date('2027-01-01T00:00:00Z'))).toEqual(['seeded']);
    expect(await store.get('seeded')).toEqual({ ...stored(update), createdAt: '2026-03-01T00:00:00.000Z' });
  });

  test("sets, changes and removes a key's history override", async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed({ history: { size: 10 } })]);
    expect((await store.get('seeded'))?.history).toEqual({ size: 10 });
    expect(await seedKeys(store, [seed({ history: { size: 10 } })])).toEqual([]);
    expect(await seedKeys(store, [seed({ history: { size: 10, ttlSeconds: 30 } })])).toEqual(['seeded']);
    expect((await store.get('seeded'))?.history).toEqual({ size: 10, ttlSeconds: 30 });
    expect(await seedKeys(store, [seed()])).toEqual(['seeded']);
    expect(await store.get('seeded')).not.toHaveProperty('history');
  });

  test("turns a key's subscription counting on and off", async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed()]);
    expect(await store.get('seeded')).not.toHaveProperty('subscriptionCount');
    expect(await seedKeys(store, [seed({ subscriptionCount: false })])).toEqual([]);
    expect(await seedKeys(store, [seed({ subscriptionCount: true })])).toEqual(['seeded']);
    expect((await store.get('seeded'))?.subscriptionCount).toBe(true);
    expect(await seedKeys(store, [seed({ subscriptionCount: true })])).toEqual([]);
    expect(await seedKeys(store, [seed({ subscriptionCount: false })])).toEqual(['seeded']);
    expect(await store.get('seeded')).not.toHaveProperty('subscriptionCount');
  });

  test("sets, changes and removes a key's app id", async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed({ appId: '1234' })]);
    expect((await store.get('seeded'))?.appId).toBe('1234');
    expect(await seedKeys(store, [seed({ appId: '1234' })])).toEqual([]);
    expect(await seedKeys(store, [seed({ appId: 'my-app' })])).toEqual(['seeded']);
    expect((await store.get('seeded'))?.appId).toBe('my-app');
    expect(await seedKeys(store, [seed()])).toEqual(['seeded']);
    expect(await store.get('seeded')).not.toHaveProperty('appId');
  });

  test('leaves an unchanged key alone', async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed()]);
    const put = jest.spyOn(store, 'put');
    expect(await seedKeys(store, [seed()])).toEqual([]);
    expect(put).not.toHaveBeenCalled();
  });

  test('does not touch keys that are not seeded', async () => {
    const store = new MemoryKeyStore();
    await seedKeys(store, [seed({ key: 'manual' })]);
    await seedKeys(store, [seed()]);
    expect((await store.list()).map((r) => r.key)).toEqual(['manual', 'seeded']);
  });
});
