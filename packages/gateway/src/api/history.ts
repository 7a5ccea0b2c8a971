import { historyRetention } from '@switchboard/core';
import type { Protocol } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { HISTORY_PAGE } from '../history/streams';
import { authenticate, channelField, nonNegativeInt } from './request';
import type { Body } from './request';

/**
 * `POST /api/history` (V3 topics) and `POST /api/v4/history`: the topic's position and its
 * stored publications in ascending offset order, those after `since` when given, else the
 * latest `limit` (default and cap 100; 0 reads the position only).
 */
export async function history(ctx: GatewayContext, protocol: Protocol, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const since = nonNegativeInt(body, 'since');
  const limit = Math.min(nonNegativeInt(body, 'limit') ?? HISTORY_PAGE, HISTORY_PAGE);
  const topic = { key: record.key, protocol, channel };
  const { ttlSeconds } = historyRetention(record, ctx.config);
  const page = await ctx.engine.history.read(
    topic,
    since === undefined ? { limit, ttlSeconds } : { since, limit, ttlSeconds },
  );
  return {
    success: true,
    epoch: page.epoch,
    offset: page.offset,
    publications: page.publications.map((publication) => ({
      offset: publication.offset,
      message: publication.body,
      timestamp: new Date(publication.acceptedAt ?? 0).toISOString(),
    })),
  };
}
