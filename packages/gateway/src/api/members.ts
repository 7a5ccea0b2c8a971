import { AppError } from '@switchboard/core';
import type { Member } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { authenticate, channelField, positiveInt } from './request';
import type { Body } from './request';

const MAX_LIMIT = 100;

function paginateFlag(body: Body): boolean {
  const value = body['paginate'];
  if (value === undefined || value === null || value === 0 || value === false || value === '0') return false;
  if (value === 1 || value === true || value === '1') return true;
  throw new AppError('SB_INVALID_FIELD', 'Invalid field "paginate": send 1 to paginate');
}

/** `POST /api/v4/members`: identities, deduplicated, most recently active first (docs/openapi.yaml). */
export async function membersV4(ctx: GatewayContext, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const topic = { key: record.key, protocol: 'v4' as const, channel };
  if (!paginateFlag(body)) {
    const page = await ctx.engine.presence.identities(topic, 0, ctx.config.limits.rosterLimit);
    return { success: true, members: page.identities, count: page.count };
  }
  const page = positiveInt(body, 'page', 1);
  const limit = Math.min(positiveInt(body, 'limit', MAX_LIMIT), MAX_LIMIT);
  const result = await ctx.engine.presence.identities(topic, (page - 1) * limit, limit);
  return {
    success: true,
    members: result.identities,
    count: result.count,
    page,
    limit,
    totalPages: Math.ceil(result.count / limit),
  };
}

/**
 * `POST /api/members`: V3 member objects, one per connection, the `ROSTER_LIMIT` most recently
 * active of a channel with `count` the true total. Without `channel`: a page of the key's V3
 * channels in name order (`page`, `limit` up to 100), each with its `ROSTER_LIMIT` most recent
 * members. Every read is bounded, whatever the size of the key.
 */
export async function membersV3(ctx: GatewayContext, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, false);
  const membersPerChannel = ctx.config.limits.rosterLimit;
  if (channel !== undefined) {
    const roster = await ctx.engine.presence.roster(
      { key: record.key, protocol: 'v3', channel },
      membersPerChannel,
    );
    return { success: true, members: roster.members, count: roster.total };
  }
  const page = positiveInt(body, 'page', 1);
  const limit = Math.min(positiveInt(body, 'limit', MAX_LIMIT), MAX_LIMIT);
  const listed = await ctx.engine.presence.channels(record.key, {
    protocol: 'v3',
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
