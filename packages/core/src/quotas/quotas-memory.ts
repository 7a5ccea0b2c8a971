import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Quotas } from './quotas';
import { RateLimiterQuotas } from './rate-limiter-quotas';

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
