import type { Publication } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { ConnectionState } from './connection';
import { stampChannel } from './frames';
import { v3Topic, v4PrimaryTopic, v4SecondaryTopic } from './topics';
import { sendTo } from './send';

/**
 * Delivers a publication to this node's connections. Each variant (V3; V4 primary; V4
 * secondary, stamped) is built once and handed to a uWS topic, which does the per-recipient
 * work in C++. `sender`, when local and its `notify_self` is off, is excluded by publishing
 * through its own socket (uWS skips the publisher).
 */
export function deliverLocal(ctx: GatewayContext, publication: Publication, sender?: ConnectionState): void {
  if (publication.to !== undefined) {
    deliverDirect(ctx, publication, sender);
    return;
  }
  const { topic } = publication;
  const excluded = sender && !sender.notifySelf && sender.conn ? sender.conn : undefined;
  const via = excluded ?? ctx.transport;
  let recipients: number;
  if (topic.protocol === 'v3') {
    const local = v3Topic(topic);
    recipients = ctx.transport.numSubscribers(local);
    if (publication.binary) via.publish(local, Buffer.from(publication.body, 'base64'), true);
    else via.publish(local, publication.body);
  } else {
    const primary = v4PrimaryTopic(topic);
    const secondary = v4SecondaryTopic(topic);
    const secondaries = ctx.transport.numSubscribers(secondary);
    recipients = ctx.transport.numSubscribers(primary) + secondaries;
    via.publish(primary, publication.body);
    if (secondaries > 0) {
      via.publish(
        secondary,
        publication.stampable ? stampChannel(publication.body, topic.channel) : publication.body,
      );
    }
  }
  record(ctx, publication, excluded ? recipients - 1 : recipients);
}

/** Deliveries and publish-to-delivery latency of messages (presence events have no source). */
function record(ctx: GatewayContext, publication: Publication, recipients: number): void {
  const { source, acceptedAt } = publication;
  if (!source || recipients <= 0) return;
  const { protocol } = publication.topic;
  ctx.meters.messagesOut[protocol][source].inc(recipients);
  if (acceptedAt !== undefined)
    ctx.meters.deliveryLatency(protocol, Math.max(0, Date.now() - acceptedAt) / 1000);
}

/**
 * V4 direct message (`system::to`): only the channel's connections whose `user` equals the
 * target receive it; the sender only when it is a target and its `notify_self` is on.
 */
function deliverDirect(ctx: GatewayContext, publication: Publication, sender?: ConnectionState): void {
  const { topic } = publication;
  let stamped: string | undefined;
  for (const state of ctx.registry.inTopic(topic)) {
    const sub = state.subs.get(topic.channel);
    if (!sub || sub.userIdentity !== publication.to) continue;
    if (state === sender && !state.notifySelf) continue;
    if (sub.primary || !publication.stampable) sendTo(ctx, state, publication.body);
    else sendTo(ctx, state, (stamped ??= stampChannel(publication.body, topic.channel)));
  }
}
