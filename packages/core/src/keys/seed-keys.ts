import type { SeedKey } from '../config/schema';
import type { ApiKey } from '../types';
import type { ApiKeyRecord, KeyStore } from './key-store';

/**
 * Upserts the keys of `SWITCHBOARD_KEYS` at start: a seed replaces the secret, app id, domains,
 * options (`subscriptionCount` among them), history override, webhook and limits
 * of a stored key of the same name and keeps its `createdAt`. Resolves the keys whose stored
 * record changed, so the caller can announce them (`key-changed`); an unchanged seed is not
 * rewritten, which keeps restarts of many nodes from churning the store.
 */
export async function seedKeys(
  store: KeyStore,
  seeds: readonly SeedKey[],
  now = new Date(),
): Promise<ApiKey[]> {
  const changed: ApiKey[] = [];
  for (const seed of seeds) {
    const existing = await store.get(seed.key);
    const record: ApiKeyRecord = {
      key: seed.key,
      secret: seed.secret,
      domains: [...seed.domains],
      clientMessages: seed.clientMessages,
      forceAuth: seed.forceAuth,
      createdAt: existing?.createdAt ?? now.toISOString(),
      ...(seed.appId !== undefined ? { appId: seed.appId } : {}),
      ...(seed.subscriptionCount ? { subscriptionCount: true as const } : {}),
      ...(seed.history ? { history: seed.history } : {}),
      ...(seed.webhook ? { webhook: seed.webhook } : {}),
      ...(seed.limits ? { limits: seed.limits } : {}),
    };
    if (existing && sameRecord(existing, record)) continue;
    await store.put(record);
    changed.push(seed.key);
  }
  return changed;
}

function sameRecord(a: ApiKeyRecord, b: ApiKeyRecord): boolean {
  return (
    a.secret === b.secret &&
    a.appId === b.appId &&
    a.clientMessages === b.clientMessages &&
    a.forceAuth === b.forceAuth &&
    (a.subscriptionCount ?? false) === (b.subscriptionCount ?? false) &&
    a.history?.size === b.history?.size &&
    a.history?.ttlSeconds === b.history?.ttlSeconds &&
    JSON.stringify(a.webhook ?? null) === JSON.stringify(b.webhook ?? null) &&
    JSON.stringify(a.limits ?? {}) === JSON.stringify(b.limits ?? {}) &&
    a.domains.length === b.domains.length &&
    a.domains.every((domain, i) => domain === b.domains[i])
  );
}
