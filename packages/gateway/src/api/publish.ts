import { publishAnswer, publishMessage } from '@switchboard/core';
import type { Protocol } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { deliverLocal } from '../ws/delivery';
import { takeRestPublish } from './rate-limit';
import { authenticate, channelField } from './request';
import type { Body } from './request';

/** `POST /api/publish` (V3) and `POST /api/v4/publish`. */
export async function publish(ctx: GatewayContext, protocol: Protocol, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const channel = channelField(body, true);
  const taking = takeRestPublish(ctx, record);
  if (taking) await taking;
  const published = await publishMessage(ctx, {
    record,
    protocol,
    channel,
    message: body['message'],
    origin: ctx.nodeId,
  });
  ctx.meters.messagesIn[protocol].api.inc();
  deliverLocal(ctx, published.publication, undefined, true);
  return publishAnswer(published);
}
