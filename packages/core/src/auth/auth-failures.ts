import { LRUCache } from 'lru-cache';
import { AppError } from '../errors';

export interface AuthFailureLimits {
  /** Failed authentications allowed per API key (as presented) per window; 0 turns it off. */
  readonly perKey: number;
  /** Failed authentications allowed per client address per window; 0 turns it off. */
  readonly perAddress: number;
  readonly windowMs: number;
}

/** Subjects tracked at most: the least recently failing are forgotten first. */
const MAX_SUBJECTS = 50_000;

/**
 * Limits guessing of secrets on one process (the cluster API of a gateway, the account API):
 * failed authentications are counted per API key and per client address in fixed windows. Once
 * either count reaches its limit, every request for that key or from that address is refused with
 * 429 until the window ends, a right secret included (otherwise the refusal would not slow the
 * guessing down). Limits hold per process, not cluster-wide: N nodes behind a balancer allow N
 * times as many guesses. The price is that failures for a key can lock its real owner out for a
 * window; the defaults are high enough that only guessing reaches them.
 */
export class AuthFailureLimiter {
  private readonly windows = new LRUCache<string, { start: number; count: number }>({ max: MAX_SUBJECTS });

  constructor(private readonly limits: AuthFailureLimits) {}

  /**
   * False while nothing failed lately (the common case): `check` would pass whatever it is
   * given, so a caller can skip finding the client's address.
   */
  get tracking(): boolean {
    return this.windows.size > 0;
  }

  /** Throws `SB_AUTH_RATE_LIMITED` (with `retryAfterSeconds`) while the key or the address is over its limit. */
  check(key: string | undefined, address: string | undefined, now = Date.now()): void {
    if (!this.tracking) return;
    const over = (subject: string, limit: number): number | undefined => {
      if (limit === 0) return undefined;
      const window = this.windows.get(subject);
      if (!window || now - window.start >= this.limits.windowMs || window.count < limit) return undefined;
      return Math.max(1, Math.ceil((window.start + this.limits.windowMs - now) / 1000));
    };
    const forKey = key === undefined ? undefined : over(`k:${key}`, this.limits.perKey);
    const forAddress = address === undefined ? undefined : over(`a:${address}`, this.limits.perAddress);
    if (forKey === undefined && forAddress === undefined) return;
    const retryAfterSeconds = Math.max(forKey ?? 0, forAddress ?? 0);
    const which = forKey !== undefined ? 'for this API key' : 'from this address';
    throw new AppError(
      'SB_AUTH_RATE_LIMITED',
      `Too many failed authentications ${which}; requests are refused for ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    );
  }

  /** Counts one failed authentication against the key and the address. */
  failed(key: string | undefined, address: string | undefined, now = Date.now()): void {
    if (key !== undefined && this.limits.perKey > 0) this.count(`k:${key}`, now);
    if (address !== undefined && this.limits.perAddress > 0) this.count(`a:${address}`, now);
  }

  private count(subject: string, now: number): void {
    const window = this.windows.get(subject);
    if (!window || now - window.start >= this.limits.windowMs) {
      this.windows.set(subject, { start: now, count: 1 });
    } else {
      window.count += 1;
    }
  }
}
