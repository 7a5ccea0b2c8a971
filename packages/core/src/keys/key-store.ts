import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { normalizeDomain } from '../protocol/domain';
import type { ApiKey } from '../types';
import type { WebhookConfig } from '../webhooks/webhooks';

/** An API key and what it allows (docs/account-api.md, "Key management"). */
export interface ApiKeyRecord {
  readonly key: ApiKey;
  readonly secret: string;
  /** Allowed `Origin` hosts (a host also allows its subdomains); empty allows any. */
  readonly domains: readonly string[];
  /** Clients may publish to channels. */
  readonly clientMessages: boolean;
  /** Every channel needs a JWT, not only `private-…` ones. */
  readonly forceAuth: boolean;
  /** ISO 8601 */
  readonly createdAt: string;
  /** Overrides `HISTORY_SIZE` / `HISTORY_TTL_SECONDS` for this key's topics (see `historyRetention`). */
  readonly history?: HistoryOverride;
  /** Where the key's channel and presence events are POSTed (docs/webhooks.md). */
  readonly webhook?: WebhookConfig;
  /** Overrides the per-key quotas of the configuration (see `keyLimits`). */
  readonly limits?: KeyLimits;
}

/**
 * A key's own quotas, counted across every gateway (docs/security.md, "Limits"); each absent field
 * takes the configuration's default, and 0 means unlimited.
 */
export interface KeyLimits {
  /** Open sockets (`MAX_CONNECTIONS_PER_KEY`). */
  readonly connections?: number;
  /** Cluster API requests per second (`API_REQUESTS_PER_SECOND`). */
  readonly apiRequestsPerSecond?: number;
  /** REST publishes and relayed client messages per second (`PUBLISHES_PER_SECOND_PER_KEY`). */
  readonly publishesPerSecond?: number;
  /** REST publishes and relayed client messages per UTC day (`MESSAGES_PER_DAY_PER_KEY`). */
  readonly messagesPerDay?: number;
}

/** A key's own history retention; each absent field falls back to the configuration's. */
export interface HistoryOverride {
  /** Publications kept per topic; 0 turns history off for the key. */
  readonly size?: number;
  readonly ttlSeconds?: number;
}

/**
 * KeyStore: the API keys every gateway and the account API read.
 *
 * Contract, for every implementation:
 * - `put` inserts or replaces a record by `key`; `delete` returns whether the key existed.
 * - `put` refuses a record with a domain that is not one (`InvalidDomainError`, nothing stored):
 *   every writer (CLI, seeds, future APIs) goes through it.
 * - `get` of an unknown key resolves `null`; `list` returns every record, ordered by key.
 * - Readers may cache records for a few seconds (`KEY_CACHE_MS`); writers announce changes
 *   through the broker's `key-changed` control command so caches drop them at once.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface KeyStore {
  get(key: ApiKey): Promise<ApiKeyRecord | null>;
  list(): Promise<ApiKeyRecord[]>;
  /** The records with a webhook, ordered by key (read often by every gateway's dispatcher). */
  listWebhooks(): Promise<ApiKeyRecord[]>;
  put(record: ApiKeyRecord): Promise<void>;
  delete(key: ApiKey): Promise<boolean>;
}

/** Throws `InvalidDomainError` for the first invalid domain of `record`; `put` calls it first. */
export function assertValidDomains(record: ApiKeyRecord): void {
  for (const domain of record.domains) normalizeDomain(domain);
}

/** A new key record with random, URL-safe, high-entropy key (96 bits) and secret (256 bits). */
export function generateKeyRecord(
  options: Partial<Omit<ApiKeyRecord, 'key' | 'secret' | 'createdAt'>> = {},
): ApiKeyRecord {
  return {
    key: randomBytes(12).toString('base64url'),
    secret: randomBytes(32).toString('base64url'),
    domains: options.domains ?? [],
    clientMessages: options.clientMessages ?? true,
    forceAuth: options.forceAuth ?? false,
    createdAt: new Date().toISOString(),
    ...(options.history ? { history: options.history } : {}),
    ...(options.webhook ? { webhook: options.webhook } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  };
}

/**
 * Compared against when the API key is unknown, so an unknown key and a wrong secret take the same
 * work and keys cannot be probed by timing.
 */
export const UNKNOWN_KEY_SECRET = 'no such key: compared anyway';

/** Compares a presented secret with the stored one in constant time (digests hide the length). */
export function secretMatches(presented: string, stored: string): boolean {
  const a = sha256(presented);
  return timingSafeEqual(a, digestOf(stored));
}

/** SHA-256 in one call (`crypto.hash`, Node ≥ 20.12: no Hash object per request), else a Hash. */
const sha256: (text: string) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'buffer')
    : (text) => createHash('sha256').update(text).digest();

/** Digests of stored secrets, computed once per secret (requests present them over and over). */
const storedDigests = new Map<string, Buffer>();

function digestOf(stored: string): Buffer {
  let digest = storedDigests.get(stored);
  if (!digest) {
    if (storedDigests.size >= 10_000) storedDigests.clear();
    digest = createHash('sha256').update(stored).digest();
    storedDigests.set(stored, digest);
  }
  return digest;
}
