import { historyOverride, keyLimits } from '../config/schema';
import { assertValidDomains } from '../keys/key-store';
import type { ApiKeyRecord, HistoryOverride, KeyLimits, KeyStore } from '../keys/key-store';
import { EngineUnavailableError } from '../errors';
import type { ApiKey } from '../types';
import { guard } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';

/**
 * Field layout of one key's HASH; domains as a JSON array, flags as "1"/"0", `history` (only
 * when the key overrides the retention) as JSON `{"size":n,"ttlSeconds":s}`, `limits` (only when
 * the key overrides a quota) as JSON `{"connections":n,…}`.
 */
type KeyHash = Record<'secret' | 'domains' | 'clientMessages' | 'forceAuth' | 'createdAt', string> & {
  history?: string;
  limits?: string;
};

function toHash(record: ApiKeyRecord): KeyHash {
  const hash: KeyHash = {
    secret: record.secret,
    domains: JSON.stringify(record.domains),
    clientMessages: record.clientMessages ? '1' : '0',
    forceAuth: record.forceAuth ? '1' : '0',
    createdAt: record.createdAt,
  };
  if (record.history) hash.history = JSON.stringify(record.history);
  if (record.limits) hash.limits = JSON.stringify(record.limits);
  return hash;
}

/** The stored override; one that does not parse (never written so) is ignored: the config applies. */
function historyOf(text: string | undefined): HistoryOverride | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = historyOverride.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** The stored quotas; ones that do not parse (never written so) are ignored: the config applies. */
function limitsOf(text: string | undefined): KeyLimits | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = keyLimits.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function fromHash(key: ApiKey, hash: Record<string, string>): ApiKeyRecord | null {
  if (hash.secret === undefined) return null;
  const history = historyOf(hash.history);
  const limits = limitsOf(hash.limits);
  return {
    key,
    secret: hash.secret,
    domains: JSON.parse(hash.domains ?? '[]') as string[],
    clientMessages: hash.clientMessages !== '0',
    forceAuth: hash.forceAuth === '1',
    createdAt: hash.createdAt ?? '',
    ...(history ? { history } : {}),
    ...(limits ? { limits } : {}),
  };
}

/** All records and the index share the `{keystore}` tag, so writes are one MULTI on a cluster too. */
export class RedisKeyStore implements KeyStore {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async get(key: ApiKey): Promise<ApiKeyRecord | null> {
    return fromHash(key, await guard(this.client, () => this.client.hgetall(this.keys.apiKey(key))));
  }

  async list(): Promise<ApiKeyRecord[]> {
    const names = (await guard(this.client, () => this.client.smembers(this.keys.apiKeyIndex()))).sort();
    if (names.length === 0) return [];
    const pipeline = this.client.pipeline();
    for (const name of names) pipeline.hgetall(this.keys.apiKey(name));
    const results = await guard(this.client, () => pipeline.exec());
    const records: ApiKeyRecord[] = [];
    names.forEach((name, i) => {
      const [error, hash] = results?.[i] ?? [new Error('pipeline aborted'), null];
      if (error) throw new EngineUnavailableError(error);
      const record = fromHash(name, hash as Record<string, string>);
      if (record) records.push(record);
    });
    return records;
  }

  async put(record: ApiKeyRecord): Promise<void> {
    assertValidDomains(record);
    const hash = this.keys.apiKey(record.key);
    await this.exec(
      this.client.multi().del(hash).hset(hash, toHash(record)).sadd(this.keys.apiKeyIndex(), record.key),
    );
  }

  async delete(key: ApiKey): Promise<boolean> {
    const results = await this.exec(
      this.client.multi().del(this.keys.apiKey(key)).srem(this.keys.apiKeyIndex(), key),
    );
    return results[0]?.[1] === 1;
  }

  private async exec(multi: ReturnType<RedisClient['multi']>): Promise<[Error | null, unknown][]> {
    const results = await guard(this.client, () => multi.exec());
    const failed = results?.find(([error]) => error);
    if (!results || failed) throw new EngineUnavailableError(failed?.[0] ?? new Error('MULTI aborted'));
    return results;
  }
}
