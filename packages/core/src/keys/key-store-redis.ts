import type { z } from 'zod';
import { historyOverride, keyLimits, webhookConfig } from '../config/schema';
import { assertValidDomains } from './key-store';
import { assertValidAppId, isValidAppId } from '../names/app-id';
import type { ApiKeyRecord, KeyStore } from './key-store';
import { EngineUnavailableError } from '../errors';
import type { ApiKey } from '../types';
import { webhookEvents } from '../webhooks/webhooks';
import { guard } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';

/**
 * Field layout of one key's HASH; domains as a JSON array, flags as "1"/"0", `appId` (only when
 * set; records written before app ids have none, and read as the key's default),
 * `subscriptionCount` ("1", only when on), `history` (only
 * when the key overrides the retention) as JSON `{"size":n,"ttlSeconds":s}`, `webhook` (only
 * with one) as JSON `{"url":…,"events":[…]}`, `limits` (only when the key overrides a quota) as
 * JSON `{"connections":n,…}`.
 */
type KeyHash = Record<'secret' | 'domains' | 'clientMessages' | 'forceAuth' | 'createdAt', string> & {
  appId?: string;
  subscriptionCount?: string;
  history?: string;
  webhook?: string;
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
  if (record.appId !== undefined) hash.appId = record.appId;
  if (record.subscriptionCount) hash.subscriptionCount = '1';
  if (record.history) hash.history = JSON.stringify(record.history);
  if (record.webhook) hash.webhook = JSON.stringify(record.webhook);
  if (record.limits) hash.limits = JSON.stringify(record.limits);
  return hash;
}

/**
 * An optional JSON field of the record (`history`, `webhook`, `limits`); one that does not parse
 * (never written so) is taken as absent, so the configuration applies.
 */
function stored<T>(text: string | undefined, schema: z.ZodType<T, z.ZodTypeDef, unknown>): T | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function fromHash(key: ApiKey, hash: Record<string, string>): ApiKeyRecord | null {
  if (hash.secret === undefined) return null;
  const history = stored(hash.history, historyOverride);
  const webhook = stored(hash.webhook, webhookConfig);
  const limits = stored(hash.limits, keyLimits);
  return {
    key,
    secret: hash.secret,
    domains: JSON.parse(hash.domains ?? '[]') as string[],
    clientMessages: hash.clientMessages !== '0',
    forceAuth: hash.forceAuth === '1',
    createdAt: hash.createdAt ?? '',
    ...(isValidAppId(hash.appId) ? { appId: hash.appId } : {}),
    ...(hash.subscriptionCount === '1' ? { subscriptionCount: true as const } : {}),
    ...(history ? { history } : {}),
    ...(webhook ? { webhook } : {}),
    ...(limits ? { limits } : {}),
  };
}

/**
 * All records and the index share the `{keystore}` tag, so writes are one MULTI on a cluster too.
 * A key's webhook switch (in the key's own slot, read by the counts and presence scripts) is
 * written right after its record.
 */
export class RedisKeyStore implements KeyStore {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async get(key: ApiKey): Promise<ApiKeyRecord | null> {
    return fromHash(key, await guard(this.client, () => this.client.hgetall(this.keys.apiKey(key))));
  }

  async list(): Promise<ApiKeyRecord[]> {
    return this.records(this.keys.apiKeyIndex());
  }

  async listWebhooks(): Promise<ApiKeyRecord[]> {
    return (await this.records(this.keys.apiKeyWebhookIndex())).filter((r) => r.webhook !== undefined);
  }

  /** The records of the keys an index holds, ordered by key. */
  private async records(index: string): Promise<ApiKeyRecord[]> {
    const names = (await guard(this.client, () => this.client.smembers(index))).sort();
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
    assertValidAppId(record);
    const hash = this.keys.apiKey(record.key);
    const multi = this.client
      .multi()
      .del(hash)
      .hset(hash, toHash(record))
      .sadd(this.keys.apiKeyIndex(), record.key);
    if (record.webhook) multi.sadd(this.keys.apiKeyWebhookIndex(), record.key);
    else multi.srem(this.keys.apiKeyWebhookIndex(), record.key);
    await this.exec(multi);
    const onSwitch = this.keys.webhookSwitch(record.key);
    const events = record.webhook ? ` ${webhookEvents(record.webhook).join(' ')} ` : undefined;
    await guard(this.client, (): Promise<unknown> =>
      events === undefined ? this.client.del(onSwitch) : this.client.set(onSwitch, events),
    );
  }

  async delete(key: ApiKey): Promise<boolean> {
    const results = await this.exec(
      this.client
        .multi()
        .del(this.keys.apiKey(key))
        .srem(this.keys.apiKeyIndex(), key)
        .srem(this.keys.apiKeyWebhookIndex(), key),
    );
    // The key's webhook state (its own slot): the switch, so no event is stored any more, and the
    // stream with its consumer group and the lease, so a deleted key leaves nothing behind. A
    // dispatcher still reading the key meanwhile does not create the stream again (see
    // `webhookRead` in webhook-scripts.ts).
    await guard(this.client, () =>
      this.client
        .multi()
        .del(
          this.keys.webhookSwitch(key),
          this.keys.webhookEvents(key),
          this.keys.webhookLease(key),
          this.keys.webhookBytes(key),
        )
        .exec(),
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
