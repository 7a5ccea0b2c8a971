import type { ApiKeyRecord, KeyStore } from '@switchboard/core';

/**
 * Short-lived cache in front of the key store, so admitting a connection or authenticating a
 * request costs no engine round trip. Entries (unknown keys too) live `ttlMs`; a `key-changed`
 * control command drops one at once on every node.
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
    const record = await this.store.get(key);
    if (this.ttlMs > 0) {
      if (this.entries.size > 10_000) this.entries.clear();
      this.entries.set(key, { record, expires: now + this.ttlMs });
    }
    return record;
  }

  invalidate(key: string): void {
    this.entries.delete(key);
  }
}
