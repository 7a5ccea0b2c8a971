import { RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { ApiKey } from '../types';
import type { QuotaNames, QuotaRefusal, Quotas } from './quotas';

/** Makes the limiter of one limit value: `points` per `durationSeconds` window. */
export type LimiterFactory = (points: number, durationSeconds: number) => RateLimiterAbstract;

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
