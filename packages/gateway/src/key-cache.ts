import { LRUCache } from 'lru-cache';
import type { ApiKeyRecord, KeyStore } from '@switchboard/core';

/** Unknown keys remembered at most; the least recently asked for is forgotten first. */
export const MAX_UNKNOWN_KEYS = 10_000;

/**
 * Short-lived cache in front of the key store, so admitting a connection or authenticating a
 * request costs no engine round trip. Entries are fresh for `ttlMs`; a `key-changed` control
 * command drops one at once on every node. While the store is unreachable a stale known record is
 * served rather than refusing a key the node knew a moment ago.
 *
 * Known records and unknown keys are kept apart: anyone can present unknown `api_key` values, so
 * they go to a bounded LRU of their own and can never push a known record (or its stale copy,
 * which keeps admissions working through an outage) out. Known records are bounded by the store.
 */
export class KeyCache {
  private readonly known = new Map<string, { record: ApiKeyRecord; expires: number }>();
  private readonly unknown: LRUCache<string, true> | undefined;

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
  ) {
    this.unknown = ttlMs > 0 ? new LRUCache({ max: MAX_UNKNOWN_KEYS, ttl: ttlMs }) : undefined;
  }

  /**
   * What the cache can answer without the store: the fresh record, `null` for a key remembered
   * as unknown, `undefined` when only the store can tell (then `get`).
   */
  peek(key: string): ApiKeyRecord | null | undefined {
    const cached = this.known.get(key);
    if (cached) return cached.expires > Date.now() ? cached.record : undefined;
    return this.unknown?.get(key) ? null : undefined;
  }

  async get(key: string): Promise<ApiKeyRecord | null> {
    const now = Date.now();
    const cached = this.known.get(key);
    if (cached && cached.expires > now) return cached.record;
    if (!cached && this.unknown?.get(key)) return null;
    let record: ApiKeyRecord | null;
    try {
      record = await this.store.get(key);
    } catch (error) {
      if (cached) return cached.record;
      throw error;
    }
    if (record) {
      this.known.set(key, { record, expires: now + this.ttlMs });
    } else {
      this.known.delete(key);
      this.unknown?.set(key, true);
    }
    return record;
  }

  invalidate(key: string): void {
    this.known.delete(key);
    this.unknown?.delete(key);
  }
}
