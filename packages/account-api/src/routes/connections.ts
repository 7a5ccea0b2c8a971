import type { ChannelCount } from '@switchboard/core';
import { positiveIntegerParam, querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/** One channel's live connections (docs/account-api.md); `room_id` repeats `channel_id` for PieSocket clients. */
export interface ConnectionCountRecord {
  channel_id: string;
  room_id: string;
  connection_count: number;
}

export interface ConnectionsPage {
  data: ConnectionCountRecord[];
  total: number;
  page: number;
  limit: number;
  totalPages: number;
}

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 100;

const toRecord = ({ channel, count }: ChannelCount): ConnectionCountRecord => ({
  channel_id: channel,
  room_id: channel,
  connection_count: count,
});

/**
 * `GET /api/connections[?page=&limit=]`: every channel of the key with live connections (both
 * protocols), by count descending then channel ascending. With `page` or `limit` (either one) the
 * answer is a page object; `limit` defaults to 100 and is capped to 100, `page` defaults to 1, and
 * a page past the end has empty `data`. `totalPages` is `ceil(total / limit)`, so 0 when the key
 * has no connections.
 */
export const connectionsEndpoint = defineEndpoint({
  path: '/connections',
  query: querySchema({ page: positiveIntegerParam('page'), limit: positiveIntegerParam('limit') }),
  handle: async (key, query, { engine }): Promise<ConnectionCountRecord[] | ConnectionsPage> => {
    if (query.page === undefined && query.limit === undefined) {
      const { items } = await engine.counts.list(key.key);
      return items.map(toRecord);
    }
    const page = query.page ?? 1;
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const offset = Math.min((page - 1) * limit, Number.MAX_SAFE_INTEGER);
    const { items, total } = await engine.counts.list(key.key, offset, limit);
    return { data: items.map(toRecord), total, page, limit, totalPages: Math.ceil(total / limit) };
  },
});

/** `GET /api/connections/sum`: live connections of the key over every channel. No parameters. */
export const connectionsSumEndpoint = defineEndpoint({
  path: '/connections/sum',
  query: querySchema({}),
  handle: async (key, _query, { engine }): Promise<{ connection_count: number }> => ({
    connection_count: await engine.counts.sum(key.key),
  }),
});
