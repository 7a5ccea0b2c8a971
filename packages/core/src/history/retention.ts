import type { Config } from '../config/load';
import type { ApiKeyRecord } from '../keys/key-store';
import type { Topic } from '../types';
import type { HistoryRetention } from './history';

/**
 * Pusher cache channels (`cache-`, `private-cache-`, `presence-cache-`,
 * `private-encrypted-cache-`) of the Pusher family: their last event is replayed from history.
 */
const PUSHER_CACHE_CHANNEL = /^(?:private-encrypted-|private-|presence-)?cache-/;

export const isPusherCacheTopic = (topic: Pick<Topic, 'protocol' | 'channel'>): boolean =>
  topic.protocol === 'pusher' && PUSHER_CACHE_CHANNEL.test(topic.channel);

/**
 * The retention of a key's topics: the key's `history` override where it sets a field, the
 * configuration (`HISTORY_SIZE`, `HISTORY_TTL_SECONDS`) elsewhere; the byte cap is always the
 * configuration's (`HISTORY_MAX_BYTES_PER_CHANNEL`). Without an override this is
 * the configuration's own object (no allocation on the publish path).
 *
 * Given the topic, a Pusher cache channel keeps at least its last event
 * (size ≥ 1) for at least `PUSHER_CACHE_TTL_SECONDS` (docs/pusher.md, "Cache channels"), whatever
 * the key's or the deployment's history settings.
 */
export function historyRetention(
  record: Pick<ApiKeyRecord, 'history'>,
  config: Pick<Config, 'history'> & { readonly pusher?: Pick<Config['pusher'], 'cacheTtlSeconds'> },
  topic?: Pick<Topic, 'protocol' | 'channel'>,
): HistoryRetention {
  const override = record.history;
  const base: HistoryRetention = !override
    ? config.history
    : {
        size: override.size ?? config.history.size,
        ttlSeconds: override.ttlSeconds ?? config.history.ttlSeconds,
        ...(config.history.maxBytes !== undefined ? { maxBytes: config.history.maxBytes } : {}),
      };
  if (!topic || !config.pusher || !isPusherCacheTopic(topic)) return base;
  const cacheTtl = config.pusher.cacheTtlSeconds;
  if (base.size >= 1 && base.ttlSeconds >= cacheTtl) return base;
  return { ...base, size: Math.max(base.size, 1), ttlSeconds: Math.max(base.ttlSeconds, cacheTtl) };
}
