import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';
import type { Quotas } from './quotas';
import { RateLimiterQuotas } from './rate-limiter-quotas';

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
