import { z } from 'zod';
import type { JsonValue, LogRecord, Protocol } from '@switchboard/core';
import { positiveIntegerParam, querySchema } from '../http/query';
import { channelName } from './channel-actions';
import { defineEndpoint } from './endpoint';

/** A log record as `/api/logs` returns it (docs/account-api.md); `binary` marks base64 of a V3 binary frame. */
export interface LogEntry {
  id: string;
  channel: string;
  protocol: Protocol;
  source: 'api' | 'client';
  /** Left out with `messages=false`. */
  message?: string;
  binary?: true;
  uuid?: string;
  user?: JsonValue;
  timestamp: string;
}

/** Copies the documented fields only, so nothing a store keeps internally reaches a client. */
function toEntry(record: LogRecord, withMessage: boolean): LogEntry {
  const entry: LogEntry = {
    id: record.id,
    channel: record.channel,
    protocol: record.protocol,
    source: record.source,
    ...(withMessage ? { message: record.message } : {}),
    timestamp: record.timestamp,
  };
  if (record.binary) entry.binary = true;
  if (record.uuid !== undefined) entry.uuid = record.uuid;
  if (record.user !== undefined) entry.user = record.user;
  return entry;
}

const booleanParam = (name: string) =>
  z.enum(['true', 'false'], { message: `${name} must be "true" or "false"` }).optional();

/**
 * `GET /api/logs[?channel=&after=&limit=&messages=]`: the key's most recent messages (published
 * and relayed client messages, both protocols), newest first, taken from the newest `LOG_SIZE`
 * (500 by default). A log holds up to `LOG_SIZE` messages of up to `MAX_MESSAGE_BYTES` each (tens
 * of megabytes), so a poller asks for what it shows: `channel` keeps that channel's entries,
 * `after` (an entry's `id`) only those newer than it (all of them when it is no longer in the
 * log), `limit` (capped to `LOG_SIZE`) the newest that many, and `messages=false` leaves the
 * message texts out.
 */
export const logsEndpoint = defineEndpoint({
  path: '/logs',
  query: querySchema({
    channel: z.string({ message: 'channel must be given once' }).pipe(channelName).optional(),
    after: z.string({ message: 'after must be given once' }).min(1, 'after must be an entry id').optional(),
    limit: positiveIntegerParam('limit'),
    messages: booleanParam('messages'),
  }),
  handle: async (key, query, { engine, config }): Promise<LogEntry[]> => {
    let records = await engine.logs.recent(key.key, config.limits.logSize);
    if (query.after !== undefined) {
      const seen = records.findIndex((record) => record.id === query.after);
      if (seen >= 0) records = records.slice(0, seen);
    }
    if (query.channel !== undefined) records = records.filter((record) => record.channel === query.channel);
    const limit = Math.min(query.limit ?? config.limits.logSize, config.limits.logSize);
    return records.slice(0, limit).map((record) => toEntry(record, query.messages !== 'false'));
  },
});
