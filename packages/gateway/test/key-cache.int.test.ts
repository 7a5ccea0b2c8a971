import { createLogger, createRedisEngine, generateKeyRecord, loadConfig } from '@switchboard/core';
import type { Engine } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { KeyCache } from '../src/key-cache';

/** The key cache against a real Redis that this file kills: unknown keys must not flush it. */
describe('KeyCache', () => {
  let server: RedisServer;
  let engine: Engine;

  beforeAll(async () => {
    server = await startRedis();
    const config = loadConfig({ REDIS_URL: server.url, REDIS_PREFIX: `kc${process.pid}` });
    engine = await createRedisEngine(config, createLogger({ level: 'silent' }));
  });

  afterAll(async () => {
    await engine.close();
    await server.stop();
  });

  it('remembers an unknown key for the TTL, then asks the store again', async () => {
    const cache = new KeyCache(engine.keys, 60_000);
    const record = generateKeyRecord();
    expect(await cache.get(record.key)).toBeNull();
    await engine.keys.put(record);
    expect(await cache.get(record.key)).toBeNull();
    cache.invalidate(record.key);
    expect(await cache.get(record.key)).toEqual(record);
  });

  it('peeks at what get would answer from the cache only: a fresh record, null for a remembered unknown key', async () => {
    const cache = new KeyCache(engine.keys, 60_000);
    const record = generateKeyRecord();
    expect(cache.peek(record.key)).toBeUndefined();
    expect(await cache.get(record.key)).toBeNull();
    expect(cache.peek(record.key)).toBeNull();
    await engine.keys.put(record);
    cache.invalidate(record.key);
    expect(cache.peek(record.key)).toBeUndefined();
    expect(await cache.get(record.key)).toEqual(record);
    expect(cache.peek(record.key)).toEqual(record);
    const expiring = new KeyCache(engine.keys, 0);
    expect(await expiring.get(record.key)).toEqual(record);
    expect(expiring.peek(record.key)).toBeUndefined();
  });

  it('keeps the record it has when a refresh reads it unchanged, so connections share one object', async () => {
    // TTL 0: every get asks the store again.
    const cache = new KeyCache(engine.keys, 0);
    const record = generateKeyRecord();
    await engine.keys.put(record);
    const first = await cache.get(record.key);
    expect(first).toEqual(record);
    expect(await cache.get(record.key)).toBe(first);
    const changed = { ...record, clientMessages: !record.clientMessages };
    await engine.keys.put(changed);
    const after = await cache.get(record.key);
    expect(after).toEqual(changed);
    expect(after).not.toBe(first);
    expect(await cache.get(record.key)).toBe(after);
  });

  it('keeps serving a known key through an outage after 20,000 distinct unknown keys', async () => {
    const known = generateKeyRecord();
    await engine.keys.put(known);
    const ttlMs = 50;
    const cache = new KeyCache(engine.keys, ttlMs);
    expect(await cache.get(known.key)).toEqual(known);

    const unknown = Array.from({ length: 20_000 }, (_, i) => `unknown-${i}`);
    for (let i = 0; i < unknown.length; i += 1000) {
      const answers = await Promise.all(unknown.slice(i, i + 1000).map((key) => cache.get(key)));
      expect(answers.every((answer) => answer === null)).toBe(true);
    }

    const cachedAt = Date.now();
    await server.kill();
    try {
      // Past the TTL the cache asks the store, which fails: only the stale copy can answer.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, cachedAt + ttlMs + 1 - Date.now())));
      await expect(engine.keys.get(known.key)).rejects.toThrow();
      expect(await cache.get(known.key)).toEqual(known);
    } finally {
      // Back up, so the engine closes without reconnect attempts.
      await server.restart();
      await new Promise<void>((resolve) => {
        engine.onAvailability((up) => up && resolve());
        if (engine.isAvailable()) resolve();
      });
    }
  });
});
