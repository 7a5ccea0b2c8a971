import { AppError } from '@switchboard/core';
import { authenticate, channelField, MAX_LIMIT, positiveInt } from '../../api/request';
import type { Body } from '../../api/request';

import { FAMILY } from './family';
import type { ApiDeps } from '../../api/deps';

function paginateFlag(body: Body): boolean {
  const value = body['paginate'];
  if (value === undefined || value === null || value === 0 || value === false || value === '0') return false;
  if (value === 1 || value === true || value === '1') return true;
  throw new AppError('SB_INVALID_FIELD', 'Invalid field "paginate": send 1 to paginate');
}

/** `POST /api/v4/members`: identities, deduplicated, most recently active first (docs/openapi.yaml). */
export async function membersV4(ctx: ApiDeps, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const topic = { key: record.key, protocol: FAMILY, channel };
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
