import type { ChannelMembers, JsonValue, Protocol } from '@switchboard/core';
import { positiveIntegerParam, querySchema } from '../http/query';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './connections';
import { defineEndpoint } from './endpoint';

/** A presence member as `/api/members` lists it; `user` is omitted when unknown. */
export interface AccountMember {
  uuid: string;
  user?: JsonValue;
  protocol: Protocol;
}

export interface MembersPage {
  data: Record<string, AccountMember[]>;
  total: number;
  page: number;
  limit: number;
  totalPages: number;
}

/**
 * `GET /api/members[?page=&limit=]`: channels of the key with presence members, V3 and V4
 * together, as `{"<channel>": [member, …]}`, in channel name order; in a channel V3 entries come
 * first, then V4, each most recently active first and at most `ROSTER_LIMIT` of each. One entry
 * per presence connection (not deduplicated: a user on two devices is listed twice, with two
 * uuids). Every answer is bounded: without parameters, the first 100 channels; with `page` or
 * `limit` (capped to 100), a page object like `/api/connections`' whose `total` counts channels.
 */
export const membersEndpoint = defineEndpoint({
  path: '/members',
  query: querySchema({ page: positiveIntegerParam('page'), limit: positiveIntegerParam('limit') }),
  handle: async (key, query, { engine, config }): Promise<Record<string, AccountMember[]> | MembersPage> => {
    const paged = query.page !== undefined || query.limit !== undefined;
    const page = query.page ?? 1;
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const listed = await engine.presence.channels(key.key, {
      offset: Math.min((page - 1) * limit, Number.MAX_SAFE_INTEGER),
      limit,
      membersPerChannel: config.limits.rosterLimit,
    });
    const data = grouped(listed.channels);
    return paged
      ? { data, total: listed.total, page, limit, totalPages: Math.ceil(listed.total / limit) }
      : data;
  },
});

function grouped(channels: ChannelMembers[]): Record<string, AccountMember[]> {
  const byChannel = new Map<string, AccountMember[]>();
  for (const { channel, protocol, members } of channels) {
    const list = byChannel.get(channel) ?? [];
    for (const member of members) {
      list.push(
        member.user === undefined
          ? { uuid: member.uuid, protocol }
          : { uuid: member.uuid, user: member.user, protocol },
      );
    }
    if (list.length > 0) byChannel.set(channel, list);
  }
  // fromEntries defines own properties, so a channel named "__proto__" stays an ordinary entry.
  return Object.fromEntries(byChannel);
}
