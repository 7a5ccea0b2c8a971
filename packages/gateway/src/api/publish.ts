import { randomUUID } from 'node:crypto';
import { AppError } from '@switchboard/core';
import { historyRetention } from '@switchboard/core';
import type { Protocol, Publication } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { deliverLocal } from '../ws/delivery';
import { authenticate, channelField } from './request';
import type { Body } from './request';

const isPlainObject = (value: unknown): boolean =>
  !!value && typeof value === 'object' && !Array.isArray(value);

/**
 * The message as delivered (SPEC §4): a string is the exact text, anything else its compact JSON
 * text. `stampable` when that text is a JSON object (V4 secondaries get `system::channel` added);
 * only V4 asks (`judge`): V3 frames are never stamped, so a V3 string is not parsed.
 */
export function messageText(message: unknown, judge = true): { text: string; stampable: boolean } {
  if (message === undefined || message === null) throw new AppError('SB_MISSING_MESSAGE');
  if (typeof message === 'string') {
    let stampable = false;
    if (judge && message.startsWith('{')) {
      try {
        stampable = isPlainObject(JSON.parse(message));
      } catch {
        stampable = false;
      }
    }
    return { text: message, stampable };
  }
  try {
    return { text: JSON.stringify(message), stampable: judge && isPlainObject(message) };
  } catch {
    throw new AppError('SB_INVALID_FIELD', 'Invalid field "message": nests too deeply');
  }
}

/** `POST /api/publish` (V3) and `POST /api/v4/publish`. */
export async function publish(ctx: GatewayContext, protocol: Protocol, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const { text, stampable } = messageText(body['message'], protocol === 'v4');
  const publication: { -readonly [K in keyof Publication]: Publication[K] } = {
    topic: { key: record.key, protocol, channel },
    body: text,
    origin: ctx.nodeId,
    source: 'api',
    acceptedAt: Date.now(),
  };
  // A plain assignment: a conditional spread allocates and copies on every publish.
  if (stampable) publication.stampable = true;
  // Accepted by the engine first: a 503 means nobody, on any node, received it. The engine
  // assigns its offset in the topic's stream; opted-in subscriptions get it from there.
  const position = await ctx.engine.broker.publish(publication, historyRetention(record, ctx.config));
  ctx.meters.messagesIn[protocol].api.inc();
  deliverLocal(ctx, publication, undefined, true);
  // The log is bookkeeping: the answer does not wait for it (one Redis round trip less per
  // publish); it goes out after the publish on the same connection, with the connection's next
  // commands (message-log-redis.ts), so a later read on this node sees it.
  void ctx.engine.logs
    .append(record.key, {
      id: randomUUID(),
      channel,
      protocol,
      source: 'api',
      message: text,
      timestamp: new Date().toISOString(),
    })
    .catch((error: unknown) => ctx.logger.warn({ err: error }, 'message log append failed'));
  return position ? { success: true, offset: position.offset, epoch: position.epoch } : { success: true };
}
