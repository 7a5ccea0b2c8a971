import { LRUCache } from 'lru-cache';
import { AppError } from '../errors';

export interface AuthFailureLimits {
  /** Failed authentications allowed per client address per window; 0 turns the limit off. */
  readonly perAddress: number;
  readonly windowMs: number;
}

/** Addresses tracked at most: the least recently failing are forgotten first. */
const MAX_ADDRESSES = 50_000;

/**
 * Limits guessing of secrets on one process (the cluster API of a gateway, the account API):
 * failed authentications are counted per client address in fixed windows. Once an address reaches
 * the limit, every request from it is refused with 429 until the window ends, a right secret
 * included (otherwise the refusal would not slow its guessing down).
 *
 * Never per API key: keys are public (they sit in every client URL), so a limit per key would be
 * a lock anyone could close on the key's owner. A request is only ever refused for failures of
 * its own address, so valid credentials from an address that did not fail always pass
 * (docs/security.md, "Failed authentications"). Limits hold per process, not cluster-wide: N
 * nodes behind a balancer allow N times as many guesses.
 */
export class AuthFailureLimiter {
  private readonly windows = new LRUCache<string, { start: number; count: number }>({ max: MAX_ADDRESSES });

  constructor(private readonly limits: AuthFailureLimits) {}

  /**
   * False while nothing failed lately (the common case): `check` would pass whatever it is
   * given, so a caller can skip finding the client's address.
   */
  get tracking(): boolean {
    return this.windows.size > 0;
  }

  /** Throws `SB_AUTH_RATE_LIMITED` (with `retryAfterSeconds`) while the address is over its limit. */
  check(address: string | undefined, now = Date.now()): void {
    if (!this.tracking || address === undefined || this.limits.perAddress === 0) return;
    const window = this.windows.get(address);
    if (!window || now - window.start >= this.limits.windowMs || window.count < this.limits.perAddress)
      return;
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + this.limits.windowMs - now) / 1000));
    throw new AppError(
      'SB_AUTH_RATE_LIMITED',
      `Too many failed authentications from this address; requests are refused for ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    );
  }

  /** Counts one failed authentication against the client address. */
  failed(address: string | undefined, now = Date.now()): void {
    if (address === undefined || this.limits.perAddress === 0) return;
    const window = this.windows.get(address);
    if (!window || now - window.start >= this.limits.windowMs) {
      this.windows.set(address, { start: now, count: 1 });
    } else {
      window.count += 1;
    }
  }
}
