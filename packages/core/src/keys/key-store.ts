import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { normalizeDomain } from '../names/domain';
import type { ApiKey } from '../types';
import type { WebhookConfig } from '../webhooks/webhooks';

/** An API key and what it allows (docs/account-api.md, "Key management"). */
export interface ApiKeyRecord {
  readonly key: ApiKey;
  readonly secret: string;
  /**
   * The Pusher app id (docs/pusher.md, "Keys are apps"), as the Pusher HTTP API names it in
   * `/apps/{app_id}/…`; absent: the key itself (`appIdOf`). Valid ids: `isValidAppId`.
   */
  readonly appId?: string;
  /** Allowed `Origin` hosts (a host also allows its subdomains); empty allows any. */
  readonly domains: readonly string[];
  /** Clients may publish to channels. */
  readonly clientMessages: boolean;
  /** Every channel needs a JWT, not only `private-…` ones. */
  readonly forceAuth: boolean;
  /**
   * Pusher's subscription counting (docs/pusher.md, "Subscription counts"): subscribers of the
   * key's public, private and encrypted Pusher channels get `pusher_internal:subscription_count`
   * events. Present only when on; absent (records written before it too) is off.
   */
  readonly subscriptionCount?: true;
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
    ...(options.appId !== undefined ? { appId: options.appId } : {}),
    ...(options.subscriptionCount ? { subscriptionCount: true as const } : {}),
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

/**
 * Longest secret a key may have and a request may present (docs/security.md, "Failed
 * authentications"). Generated secrets have 43 characters; a longer presented one cannot match, and
 * the APIs refuse it with 400 before anything is looked up, hashed or kept.
 */
export const MAX_SECRET_LENGTH = 256;

/**
 * Compares a presented secret with the stored one in constant time (digests hide the length).
 * A presented secret longer than `MAX_SECRET_LENGTH` is false at once, never hashed.
 */
export function secretMatches(presented: string, stored: string): boolean {
  if (presented.length > MAX_SECRET_LENGTH) return false;
  return timingSafeEqual(digests.get(presented) ?? sha256(presented), digestOf(stored));
}

/** SHA-256 of a string: the one-shot `crypto.hash` where Node has it (20.12 and later), cheaper than a `Hash` object. */
const sha256: (text: string) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'buffer')
    : (text) => createHash('sha256').update(text).digest();

/**
 * Digests of stored secrets, computed once per text: a publisher presents the same secret on
 * every request, and a SHA-256 costs more than the rest of its authentication. A presented secret
 * is looked up here, so a right one is not hashed again, but a presented text is never added:
 * the map holds only the stored secrets the process compared against (bounded by the keys, each
 * at most `MAX_SECRET_LENGTH`), never what a stranger sends. The comparison itself stays on
 * digests, in constant time. Emptied when full, in case keys are rotated without end.
 */
const digests = new Map<string, Buffer>();

function digestOf(text: string): Buffer {
  let digest = digests.get(text);
  if (!digest) {
    if (digests.size >= 10_000) digests.clear();
    digest = sha256(text);
    digests.set(text, digest);
  }
  return digest;
}

/** How many secret digests this process keeps (for tests: a stranger's guesses must not add any). */
export function rememberedSecretDigests(): number {
  return digests.size;
}
