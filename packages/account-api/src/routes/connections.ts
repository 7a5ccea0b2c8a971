import { z } from 'zod';
import { COUNT_FAMILIES } from '@switchboard/core';
import type { ChannelCount, CountFamily } from '@switchboard/core';
import { positiveIntegerParam, querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/**
 * One channel's live connections (docs/account-api.md); `room_id` repeats `channel_id` for
 * PieSocket clients. Rows of the Pusher family carry `family: "pusher"`; PieSocket rows (V3 and
 * V4 together) have no `family`, the shape they always had.
 */
export interface ConnectionCountRecord {
  channel_id: string;
  room_id: string;
  connection_count: number;
  family?: 'pusher';
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

const toRecord =
  (family: CountFamily) =>
  ({ channel, count }: ChannelCount): ConnectionCountRecord =>
    family === 'pusher'
      ? { channel_id: channel, room_id: channel, connection_count: count, family }
      : { channel_id: channel, room_id: channel, connection_count: count };

/** `family`: which world's counts (docs/pusher.md): `piesocket` (V3 and V4, the default) or `pusher`. */
const familyParam = z.enum(COUNT_FAMILIES as [CountFamily, ...CountFamily[]], {
  message: `must be ${COUNT_FAMILIES.map((family) => JSON.stringify(family)).join(' or ')}`,
});

/**
 * `GET /api/connections[?page=&limit=&family=]`: every channel of the key with live connections
 * of one count family (`piesocket` by default: V3 and V4 together; `pusher`: Pusher sockets, rows
 * marked `family: "pusher"`), by count descending then channel ascending. With `page` or `limit` (either one) the
 * answer is a page object; `limit` defaults to 100 and is capped to 100, `page` defaults to 1, and
 * a page past the end has empty `data`. `totalPages` is `ceil(total / limit)`, so 0 when the key
 * has no connections.
 */
export const connectionsEndpoint = defineEndpoint({
  path: '/connections',
  query: querySchema({
    page: positiveIntegerParam('page'),
    limit: positiveIntegerParam('limit'),
    family: familyParam.optional(),
  }),
  handle: async (key, query, { engine }): Promise<ConnectionCountRecord[] | ConnectionsPage> => {
    const family = query.family ?? 'piesocket';
    if (query.page === undefined && query.limit === undefined) {
      const { items } = await engine.counts.list(key.key, undefined, undefined, family);
      return items.map(toRecord(family));
    }
    const page = query.page ?? 1;
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const offset = Math.min((page - 1) * limit, Number.MAX_SAFE_INTEGER);
    const { items, total } = await engine.counts.list(key.key, offset, limit, family);
    return { data: items.map(toRecord(family)), total, page, limit, totalPages: Math.ceil(total / limit) };
  },
});

/** `GET /api/connections/sum[?family=]`: live connections of the key over every channel of one count family. */
export const connectionsSumEndpoint = defineEndpoint({
  path: '/connections/sum',
  query: querySchema({ family: familyParam.optional() }),
  handle: async (key, query, { engine }): Promise<{ connection_count: number }> => ({
    connection_count: await engine.counts.sum(key.key, query.family ?? 'piesocket'),
  }),
});
