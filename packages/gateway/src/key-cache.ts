import { isDeepStrictEqual } from 'node:util';
import { LRUCache } from 'lru-cache';
import { EngineUnavailableError } from '@switchboard/core';
import type { ApiKey, ApiKeyRecord, KeyStore } from '@switchboard/core';

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
 *
 * Keys of `SWITCHBOARD_KEYS` (`seeded`) are this node's own configuration: from the moment the
 * engine is lost or its server changed (`seedsOwed`, it may come back empty) until this node has
 * applied them again (`seedsApplied`, the restore's first step, docs/scaling.md), a store that
 * lacks one is answered as unreachable, never as an unknown key: a client refused with 4501
 * does not reconnect, and the key is about to be written back.
 *
 * A refresh that reads the record unchanged keeps the object it already had: every connection
 * holds its key's record (`ConnectionState.record`), so a new copy every `ttlMs` would leave each
 * connection with the copy of the moment it was admitted, a record and its strings per socket on
 * a node whose clients arrive over hours (docs/performance.md, "Idle memory per connection").
 */
export class KeyCache {
  private readonly known = new Map<string, { record: ApiKeyRecord; expires: number }>();
  private readonly unknown: LRUCache<string, true> | undefined;
  private readonly seeded: ReadonlySet<string>;
  private owed = false;
  /** Bumped by every `seedsOwed`: a re-seed that started before the latest loss settles nothing. */
  private losses = 0;

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
    seeded: Iterable<ApiKey> = [],
  ) {
    this.unknown = ttlMs > 0 ? new LRUCache({ max: MAX_UNKNOWN_KEYS, ttl: ttlMs }) : undefined;
    this.seeded = new Set(seeded);
  }

  /** The engine was lost or its server changed: the seeded keys may be gone until re-applied. */
  seedsOwed(): void {
    this.losses++;
    if (this.seeded.size === 0) return;
    this.owed = true;
    for (const key of this.seeded) this.unknown?.delete(key);
  }

  /** A mark to hand to `seedsApplied` once the seeds that start now are written. */
  seedMark(): number {
    return this.losses;
  }

  /** This node wrote its seeded keys again, starting at `mark`: owed no more unless lost since. */
  seedsApplied(mark: number): void {
    if (mark === this.losses) this.owed = false;
  }

  /**
   * `get`'s answer when it is cached (a fresh record, or `null` for a key remembered unknown),
   * else `undefined`: ask `get`. Known and unknown keys are both answered here, so neither takes
   * a turn of the microtask queue the other does not.
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
    if (!record && this.owed && this.seeded.has(key)) {
      if (cached) return cached.record;
      throw new EngineUnavailableError(new Error(`seeded key ${key} not yet written back to the engine`));
    }
    if (record) {
      // The same record read again: the object connections already hold, not a copy.
      if (cached && isDeepStrictEqual(cached.record, record)) record = cached.record;
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
