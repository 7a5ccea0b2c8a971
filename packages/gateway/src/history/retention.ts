import type { ApiKeyRecord, Config, HistoryRetention } from '@switchboard/core';

// TEMPORARY until the engine side lands config and key-record retention.
export function historyRetention(_record: ApiKeyRecord, config: Config): HistoryRetention {
  const size = Number(
    (config as unknown as { historySizeOverride?: number }).historySizeOverride ??
      process.env['HISTORY_SIZE'] ??
      100,
  );
  return { size, ttlSeconds: 120 };
}
