import { AppError } from '@switchboard/core';

/**
 * Cluster API requests per second per key on this node (fixed one-second windows). A limit of
 * 0 turns it off. Over the limit: 429 with `Retry-After: 1`, and nothing was carried out.
 */
export class ApiRateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly perSecond: number) {}

  take(key: string, now = Date.now()): void {
    if (this.perSecond === 0) return;
    let window = this.windows.get(key);
    if (!window || now - window.start >= 1000) {
      if (this.windows.size > 10_000) this.windows.clear();
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    if (++window.count > this.perSecond) {
      throw new AppError(
        'SB_RATE_LIMITED',
        `Rate limit exceeded: more than ${this.perSecond} requests per second for this API key`,
        { retryAfterSeconds: 1 },
      );
    }
  }
}
