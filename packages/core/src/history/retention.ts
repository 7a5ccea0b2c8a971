import type { Config } from '../config/load';
import type { ApiKeyRecord } from '../keys/key-store';
import type { HistoryRetention } from './history';

/**
 * The retention of a key's topics: the key's `history` override where it sets a field, the
 * configuration (`HISTORY_SIZE`, `HISTORY_TTL_SECONDS`) elsewhere; the byte cap is always the
 * configuration's (`HISTORY_MAX_BYTES_PER_CHANNEL`). Without an override this is
 * the configuration's own object (no allocation on the publish path).
 */
export function historyRetention(
  record: Pick<ApiKeyRecord, 'history'>,
  config: Pick<Config, 'history'>,
): HistoryRetention {
  const override = record.history;
  if (!override) return config.history;
  return {
    size: override.size ?? config.history.size,
    ttlSeconds: override.ttlSeconds ?? config.history.ttlSeconds,
    ...(config.history.maxBytes !== undefined ? { maxBytes: config.history.maxBytes } : {}),
  };
}
