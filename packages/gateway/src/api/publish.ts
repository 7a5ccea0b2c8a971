import { publishAnswer, publishMessage } from '@switchboard/core';
import type { ApiKeyRecord, Protocol } from '@switchboard/core';
import { takeRestPublish } from '../limits/rate-limit';
import { authenticate, channelField } from './request';
import type { Body } from './request';
import type { ApiDeps } from './deps';

/**
 * `POST /api/publish` (V3) and `POST /api/v4/publish`. Written without `async`: a request whose
 * key is cached and unlimited reaches the engine in the turn it arrived, and its answer is one
 * promise step behind the engine's, not one per layer (docs/performance.md, "What a REST
 * publish costs").
 */
export function publish(ctx: ApiDeps, family: Family, body: Body): Promise<object> {
  const record = authenticate(ctx, body);
  if (record instanceof Promise) return record.then((known) => publishAs(ctx, family, body, known));
  return publishAs(ctx, family, body, record);
}

/** The topic family a route publishes to, and whether its dialect marks JSON objects (`PublishRequest`). */
export interface Family {
  readonly protocol: Protocol;
  readonly marksObjects: boolean;
}

function publishAs(ctx: ApiDeps, family: Family, body: Body, record: ApiKeyRecord): Promise<object> {
  const channel = channelField(body, true);
  const taking = takeRestPublish(ctx, record);
  if (taking) return taking.then(() => publishNow(ctx, family, body, record, channel));
  return publishNow(ctx, family, body, record, channel);
}

function publishNow(
  ctx: ApiDeps,
  { protocol, marksObjects }: Family,
  body: Body,
  record: ApiKeyRecord,
  channel: string,
): Promise<object> {
  const publishing = publishMessage(ctx, {
    record,
    protocol,
    marksObjects,
    channel,
    message: body['message'],
    origin: ctx.nodeId,
    unconfirmed: ctx.unconfirmed.add,
  });
  return publishing.then((published) => {
    ctx.meters.messagesIn[protocol]?.api.inc();
    ctx.delivery.deliver(published.publication, undefined, true);
    return publishAnswer(published);
  });
}
