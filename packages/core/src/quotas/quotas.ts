import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config/load';
import { AppError } from '../errors';
import type { ApiKeyRecord, KeyLimits } from '../keys/key-store';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';
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

type LimiterFactory = (points: number, durationSeconds: number) => RateLimiterAbstract;

const DAY_MS = 86_400_000;

/**
 * Quotas over rate-limiter-flexible: one fixed-window counter per key and quota (one atomic
 * INCR-and-expire script per use on Redis). One limiter object per distinct limit value, since
 * a key's override may differ from the default; the counter names do not depend on it.
 */
export class RateLimiterQuotas implements Quotas {
  private readonly limiters = new Map<string, RateLimiterAbstract>();
  /**
   * Counters refused in their current window, by limiter and counter name: the window's end
   * (`Date.now()` time). The windows are fixed, so a counter over its limit stays over it until
   * its window ends, whichever node counts: later uses are refused from this map without calling
   * the limiter (no promise rejection, no result object), which is what a flooding tenant costs.
   */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly create: LimiterFactory,
    private readonly names: QuotaNames,
    private readonly now: () => number = Date.now,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  async takeApiRequest(key: ApiKey, perSecond: number): Promise<QuotaRefusal | undefined> {
    if (perSecond <= 0) return undefined;
    const wait = await this.consume(`s${perSecond}`, perSecond, 1, this.names.apiRequests(key));
    if (wait === undefined) return undefined;
    return {
      limit: 'apiRequestsPerSecond',
      message: `Rate limit exceeded: more than ${perSecond} cluster API requests per second for this API key (apiRequestsPerSecond)`,
      retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
    };
  }

  async takePublish(key: ApiKey, perSecond: number, perDay: number): Promise<QuotaRefusal | undefined> {
    if (perSecond > 0) {
      const wait = await this.consume(`s${perSecond}`, perSecond, 1, this.names.publishes(key));
      if (wait !== undefined)
        return {
          limit: 'publishesPerSecond',
          message: `Rate limit exceeded: more than ${perSecond} publishes per second for this API key (publishesPerSecond)`,
          retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
        };
    }
    if (perDay > 0) {
      const now = this.now();
      const day = new Date(now).toISOString().slice(0, 10);
      const untilMidnight = DAY_MS - (now % DAY_MS);
      // The counter outlives its day by an hour, so clocks a little apart still share it.
      const ttl = Math.ceil(untilMidnight / 1000) + 3600;
      const wait = await this.consume(`d${perDay}`, perDay, ttl, this.names.messagesDay(key, day));
      if (wait !== undefined)
        return {
          limit: 'messagesPerDay',
          message: `Daily message quota used up: ${perDay} messages per day for this API key (messagesPerDay); it resets at 00:00 UTC`,
          retryAfterSeconds: Math.max(1, Math.ceil(untilMidnight / 1000)),
        };
    }
    return undefined;
  }

  /** Milliseconds until the window frees a point when refused, `undefined` when admitted. */
  private async consume(
    id: string,
    points: number,
    durationSeconds: number,
    name: string,
  ): Promise<number | undefined> {
    const blocked = `${id}|${name}`;
    const until = this.refusedUntil.get(blocked);
    if (until !== undefined) {
      const wait = until - Date.now();
      if (wait > 0) return wait;
      this.refusedUntil.delete(blocked);
    }
    let limiter = this.limiters.get(id);
    if (!limiter) {
      if (this.limiters.size > 1000) this.limiters.clear();
      limiter = this.create(points, durationSeconds);
      this.limiters.set(id, limiter);
    }
    try {
      await limiter.consume(name, 1, { customDuration: durationSeconds });
      return undefined;
    } catch (result) {
      if (result instanceof RateLimiterRes) {
        if (this.refusedUntil.size >= 100_000) this.refusedUntil.clear();
        this.refusedUntil.set(blocked, Date.now() + result.msBeforeNext);
        return result.msBeforeNext;
      }
      this.onError(result);
      return undefined;
    }
  }
}

/** In-process quotas (the memory engine): gateways sharing the memory state share the counters. */
export function createMemoryQuotas(now?: () => number): Quotas {
  return new RateLimiterQuotas(
    (points, duration) => new RateLimiterMemory({ points, duration, keyPrefix: '' }),
    {
      apiRequests: (key) => `api|${key}`,
      publishes: (key) => `pub|${key}`,
      messagesDay: (key, day) => `day|${key}|${day}`,
    },
    now,
  );
}

/**
 * Quotas on Redis: counters named by keys.ts (`quota:{<key>}:…`), so they live in the key's slot
 * on a cluster. Once a key is refused in a window, further uses on this node are refused from
 * memory until the window ends (`RateLimiterQuotas`' own map; `inMemoryBlockOnConsumed` as well
 * for uses already on their way): a flooding tenant costs no more Redis round trips than its
 * limit allows.
 */
export function createRedisQuotas(
  client: RedisClient,
  keys: RedisKeys,
  onError: (error: unknown) => void,
  now?: () => number,
): Quotas {
  return new RateLimiterQuotas(
    (points, duration) =>
      new RateLimiterRedis({
        storeClient: client,
        points,
        duration,
        keyPrefix: '',
        inMemoryBlockOnConsumed: points + 1,
      }),
    {
      apiRequests: (key) => keys.quotaApiRequests(key),
      publishes: (key) => keys.quotaPublishes(key),
      messagesDay: (key, day) => keys.quotaMessagesDay(key, day),
    },
    now,
    onError,
  );
}
