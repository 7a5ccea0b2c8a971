import type { JsonValue, LogRecord, Protocol } from '@switchboard/core';
import { querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/** A log record as `/api/logs` returns it (docs/account-api.md); `binary` marks base64 of a V3 binary frame. */
export interface LogEntry {
  id: string;
  channel: string;
  protocol: Protocol;
  source: 'api' | 'client';
  message: string;
  binary?: true;
  uuid?: string;
  user?: JsonValue;
  timestamp: string;
}

/** Copies the documented fields only, so nothing a store keeps internally reaches a client. */
function toEntry(record: LogRecord): LogEntry {
  const entry: LogEntry = {
    id: record.id,
    channel: record.channel,
    protocol: record.protocol,
    source: record.source,
    message: record.message,
    timestamp: record.timestamp,
  };
  if (record.binary) entry.binary = true;
  if (record.uuid !== undefined) entry.uuid = record.uuid;
  if (record.user !== undefined) entry.user = record.user;
  return entry;
}

/**
 * `GET /api/logs`: the key's most recent messages (published and relayed client messages, both
 * protocols), newest first, at most `LOG_SIZE` (500 by default). No parameters.
 */
export const logsEndpoint = defineEndpoint({
  path: '/logs',
  query: querySchema({}),
  handle: async (key, _query, { engine, config }): Promise<LogEntry[]> =>
    (await engine.logs.recent(key.key, config.limits.logSize)).map(toEntry),
});
