import type { Config } from '../config/load';
import { AppError } from '../errors';
import type { ApiKeyRecord, KeyLimits } from '../keys/key-store';
import type { ApiKey } from '../types';

/** A key's effective quotas: its `limits` where set, the configuration's defaults elsewhere; 0 = unlimited. */
export interface EffectiveLimits {
  readonly connections: number;
  readonly apiRequestsPerSecond: number;
  readonly publishesPerSecond: number;
  readonly messagesPerDay: number;
}

export function keyLimits(
  record: { readonly limits?: KeyLimits | undefined },
  config: Pick<Config, 'limits'>,
): EffectiveLimits {
  const own = record.limits;
  const d = config.limits;
  return {
    connections: own?.connections ?? d.maxConnectionsPerKey,
    apiRequestsPerSecond: own?.apiRequestsPerSecond ?? d.apiRequestsPerSecond,
    publishesPerSecond: own?.publishesPerSecond ?? d.publishesPerSecondPerKey,
    messagesPerDay: own?.messagesPerDay ?? d.messagesPerDayPerKey,
  };
}

/** Why a use was refused: the text names the limit; `retryAfterSeconds` goes out as `Retry-After`. */
export interface QuotaRefusal {
  readonly limit: 'apiRequestsPerSecond' | 'publishesPerSecond' | 'messagesPerDay';
  readonly message: string;
  readonly retryAfterSeconds: number;
}

/**
 * Quotas: per-key counters shared by every gateway of the cluster (one process on the memory
 * engine). Contract, for both implementations:
 * - a limit of 0 is unlimited and costs nothing (no counter is touched);
 * - `takeApiRequest` counts one cluster API request in the key's current one-second window;
 * - `takePublish` counts one publication against the per-second window first and, only when
 *   that admits it, against the UTC day (`now()`'s date; a new day starts a new counter at
 *   00:00 UTC); a refused publication does not use up the day's quota;
 * - each resolves the refusal, or `undefined` when admitted;
 * - when the backend cannot be reached the use is admitted (fail open): quotas protect the
 *   cluster from one tenant, they must not turn a Redis blip into refusals for all.
 */
export interface Quotas {
  takeApiRequest(key: ApiKey, perSecond: number): Promise<QuotaRefusal | undefined>;
  takePublish(key: ApiKey, perSecond: number, perDay: number): Promise<QuotaRefusal | undefined>;
}

export interface QuotaNames {
  apiRequests(key: ApiKey): string;
  publishes(key: ApiKey): string;
  messagesDay(key: ApiKey, day: string): string;
}

/**
 * The refusal of one publication (REST publish, console publish or relayed client message) by
 * the key's `publishesPerSecond` and `messagesPerDay`, or `undefined`; `null` when the key has
 * neither limit, so callers stay synchronous and touch no counter. Every API that publishes
 * calls this, so a key's publication quotas count its publications whichever way they came in.
 */
export function takePublishQuota(
  quotas: Quotas,
  config: Pick<Config, 'limits'>,
  record: ApiKeyRecord,
): Promise<QuotaRefusal | undefined> | null {
  const { publishesPerSecondPerKey, messagesPerDayPerKey } = config.limits;
  if (record.limits === undefined && publishesPerSecondPerKey === 0 && messagesPerDayPerKey === 0)
    return null;
  const limits = keyLimits(record, config);
  if (limits.publishesPerSecond === 0 && limits.messagesPerDay === 0) return null;
  return quotas.takePublish(record.key, limits.publishesPerSecond, limits.messagesPerDay);
}

/** A refusal as the HTTP APIs answer it: 429 with `Retry-After`, the text naming the limit. */
export const quotaError = (refusal: QuotaRefusal): AppError =>
  new AppError('SB_RATE_LIMITED', refusal.message, { retryAfterSeconds: refusal.retryAfterSeconds });
