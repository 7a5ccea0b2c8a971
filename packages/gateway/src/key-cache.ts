import type { ApiKeyRecord, KeyStore } from '@switchboard/core';

const MAX_ENTRIES = 10_000;

/**
 * Short-lived cache in front of the key store, so admitting a connection or authenticating a
 * request costs no engine round trip. Entries (unknown keys too) are fresh for `ttlMs`; a
 * `key-changed` control command drops one at once on every node. While the store is unreachable
 * a stale entry is served rather than refusing a key the node knew a moment ago.
 */
export class KeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord | null; expires: number }>();

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
  ) {}

  async get(key: string): Promise<ApiKeyRecord | null> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && cached.expires > now) return cached.record;
    let record: ApiKeyRecord | null;
    try {
      record = await this.store.get(key);
    } catch (error) {
      if (cached?.record) return cached.record;
      throw error;
    }
    if (this.ttlMs > 0 || record) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, { record, expires: now + this.ttlMs });
    }
    return record;
  }

  invalidate(key: string): void {
    this.entries.delete(key);
  }
}
