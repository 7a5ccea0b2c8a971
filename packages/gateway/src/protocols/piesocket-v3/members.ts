import type { Member } from '@switchboard/core';
import { authenticate, channelField, MAX_LIMIT, positiveInt } from '../../api/request';
import type { Body } from '../../api/request';

import { FAMILY } from './family';
import type { ApiDeps } from '../../api/deps';

/**
 * `POST /api/members`: V3 member objects, one per connection, the `ROSTER_LIMIT` most recently
 * active of a channel with `count` the true total. Without `channel`: a page of the key's V3
 * channels in name order (`page`, `limit` up to 100), each with its `ROSTER_LIMIT` most recent
 * members. Every read is bounded, whatever the size of the key.
 */
export async function membersV3(ctx: ApiDeps, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, false);
  const membersPerChannel = ctx.config.limits.rosterLimit;
  if (channel !== undefined) {
    const roster = await ctx.engine.presence.roster(
      { key: record.key, protocol: FAMILY, channel },
      membersPerChannel,
    );
    return { success: true, members: roster.members, count: roster.total };
  }
  const page = positiveInt(body, 'page', 1);
  const limit = Math.min(positiveInt(body, 'limit', MAX_LIMIT), MAX_LIMIT);
  const listed = await ctx.engine.presence.channels(record.key, {
    protocol: FAMILY,
    offset: Math.min((page - 1) * limit, Number.MAX_SAFE_INTEGER),
    limit,
    membersPerChannel,
  });
  // fromEntries defines own properties, so a channel named "__proto__" stays an ordinary entry.
  const channels = Object.fromEntries(listed.channels.map((c): [string, Member[]] => [c.channel, c.members]));
  return {
    success: true,
    channels,
    total: listed.total,
    page,
    limit,
    totalPages: Math.ceil(listed.total / limit),
  };
}
