import { readHistory } from '@switchboard/core';
import type { Protocol } from '@switchboard/core';
import { HISTORY_PAGE } from '../streams/streams';
import { authenticate, channelField, nonNegativeInt } from './request';
import type { Body } from './request';
import type { ApiDeps } from './deps';

/**
 * `POST /api/history` (V3 topics) and `POST /api/v4/history`: the topic's position and its
 * stored publications in ascending offset order, those after `since` when given, else the
 * latest `limit` (default and cap 100; 0 reads the position only).
 */
export async function history(ctx: ApiDeps, protocol: Protocol, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const since = nonNegativeInt(body, 'since');
  const limit = Math.min(nonNegativeInt(body, 'limit') ?? HISTORY_PAGE, HISTORY_PAGE);
  const topic = { key: record.key, protocol, channel };
  return readHistory(ctx, record, topic, since === undefined ? { limit } : { since, limit });
}
