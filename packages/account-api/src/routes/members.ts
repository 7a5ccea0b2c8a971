import { z } from 'zod';
import { AppError, DEFAULT_FAMILY, IDENTITY_FAMILIES, USER_MEMBER_FAMILIES } from '@switchboard/core';
import type { ChannelMembers, JsonValue, Member, Protocol } from '@switchboard/core';
import { channelName, protocolParam } from './channel-actions';
import { positiveIntegerParam, querySchema } from '../http/query';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './connections';
import { defineEndpoint } from './endpoint';

/**
 * A presence member as `/api/members` lists it; `user` is omitted when unknown, `info` when the
 * member carries none (only Pusher members carry one: their `user_info`).
 */
export interface AccountMember {
  uuid: string;
  user?: JsonValue;
  info?: JsonValue;
  protocol: Protocol;
}

/** A stored member as the account API lists it: V3 and V4 members as they always were. */
const accountMember = (member: Member, protocol: Protocol): AccountMember => ({
  uuid: member.uuid,
  ...(member.user === undefined ? {} : { user: member.user }),
  ...(member.info === undefined ? {} : { info: member.info }),
  protocol,
});

export interface MembersPage {
  data: Record<string, AccountMember[]>;
  total: number;
  page: number;
  limit: number;
  totalPages: number;
}

/**
 * `GET /api/members[?page=&limit=]`: channels of the key with presence members, every family
 * together, as `{"<channel>": [member, …]}`, in channel name order; in a channel V3 members come
 * first, then V4, then Pusher, each most recently active first and at most `ROSTER_LIMIT` of each.
 * V3 and V4 list one entry per presence connection (not deduplicated: a user on two devices is
 * listed twice, with two uuids); Pusher lists each user once (`USER_MEMBER_FAMILIES`), with its
 * most recently active socket's id and `user_info`, read from the store's identity index, never
 * deduplicated here. Every answer is bounded: without parameters, the first 100 channels; with
 * `page` or `limit` (capped to 100), a page object like `/api/connections`' whose `total` counts
 * channels.
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
      byIdentity: USER_MEMBER_FAMILIES,
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
    for (const member of members) list.push(accountMember(member, protocol));
    if (list.length > 0) byChannel.set(channel, list);
  }
  // fromEntries defines own properties, so a channel named "__proto__" stays an ordinary entry.
  return Object.fromEntries(byChannel);
}

/** V3 pages are read from the most recently active end of the roster, up to this many entries deep. */
export const MAX_V3_MEMBER_DEPTH = 10_000;

export interface ChannelMembersPage {
  data: AccountMember[];
  total: number;
  page: number;
  limit: number;
  totalPages: number;
}

/**
 * `GET /api/channel-members?channel=&protocol=&page=&limit=`: one channel's presence members of
 * one protocol (default `v4`), most recently active first, a page at a time (`limit` default and
 * cap 100). V4 and Pusher list each identity once (its most recent connection), as `POST
 * /api/v4/members` and Pusher's users list do, pages being ranges of the store's identity index
 * (no user repeated or skipped across pages); V3 lists every connection, and pages reach
 * `MAX_V3_MEMBER_DEPTH` entries deep. `total` is the true count either way.
 */
export const channelMembersEndpoint = defineEndpoint({
  path: '/channel-members',
  query: querySchema({
    channel: z.string({ message: 'channel is required (a channel name)' }).pipe(channelName),
    protocol: protocolParam.optional(),
    page: positiveIntegerParam('page'),
    limit: positiveIntegerParam('limit'),
  }),
  handle: async (key, query, { engine }): Promise<ChannelMembersPage> => {
    const protocol = query.protocol ?? DEFAULT_FAMILY;
    const page = query.page ?? 1;
    const limit = Math.min(query.limit ?? DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT);
    const topic = { key: key.key, protocol, channel: query.channel };
    const offset = (page - 1) * limit;
    let members: Member[];
    let total: number;
    if (IDENTITY_FAMILIES.has(protocol) || USER_MEMBER_FAMILIES.has(protocol)) {
      const result = await engine.presence.identities(
        topic,
        Math.min(offset, Number.MAX_SAFE_INTEGER),
        limit,
      );
      members = result.members;
      total = result.count;
    } else {
      if (offset + limit > MAX_V3_MEMBER_DEPTH)
        throw new AppError(
          'SB_INVALID_FIELD',
          `V3 member pages reach the ${MAX_V3_MEMBER_DEPTH} most recently active connections; page ${page} of ${limit} is beyond`,
        );
      const roster = await engine.presence.roster(topic, offset + limit);
      members = roster.members.slice(offset);
      total = roster.total;
    }
    const data = members.map((member) => accountMember(member, protocol));
    return { data, total, page, limit, totalPages: Math.ceil(total / limit) };
  },
});
