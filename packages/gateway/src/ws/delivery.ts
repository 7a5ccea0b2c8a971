import type { Publication } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { ConnectionState } from './connection';
import { stampChannel } from './frames';
import { offerToWaiting } from './list-gate';
import { sendTo } from './send';

/**
 * Delivers a publication to this node's connections. Each variant (V3; V4 primary; V4
 * secondary, stamped) is built once and handed to a uWS topic, which does the per-recipient
 * work in C++. `sender`, when local and its `notify_self` is off, is excluded by publishing
 * through its own socket (uWS skips the publisher). `streamed`: the publication is (or is about
 * to be) part of its topic's stream, so opted-in subscriptions get it from there instead.
 */
export function deliverLocal(
  ctx: GatewayContext,
  publication: Publication,
  sender?: ConnectionState,
  streamed: boolean = publication.offset !== undefined,
): void {
  if (publication.to !== undefined) {
    deliverDirect(ctx, publication, sender);
    return;
  }
  const { topic } = publication;
  const local = ctx.registry.local(topic);
  if (!local) return; // no socket of this node is in the channel
  const { primary, secondary } = local.names;
  const excluded = sender && !sender.notifySelf && sender.conn ? sender.conn : undefined;
  const via = excluded ?? ctx.transport;
  // Opted-in subscriptions get stream publications from their stream (history/streams.ts), in
  // offset order; every other frame (presence events, binary) also goes to their events topic.
  const events = !streamed;
  // Binary frames exist on V3 only (a V4 body is always text).
  const binary = publication.binary === true && topic.protocol === 'v3';
  const frame = binary ? Buffer.from(publication.body, 'base64') : publication.body;
  // Presence subscriptions whose member_list is not sent yet are reached from here (list-gate.ts).
  offerToWaiting(
    ctx,
    publication,
    frame,
    binary,
    streamed,
    sender && !sender.notifySelf ? sender : undefined,
  );
  let recipients = publishVariant(ctx, via, primary.plain, frame, binary);
  if (events) publishVariant(ctx, via, primary.events, frame, binary);
  if (secondary) {
    const secondaries = ctx.transport.numSubscribers(secondary.plain);
    const eventSecondaries = events ? ctx.transport.numSubscribers(secondary.events) : 0;
    if (secondaries + eventSecondaries > 0) {
      const stamped = publication.stampable
        ? stampChannel(publication.body, topic.channel)
        : publication.body;
      if (secondaries > 0) via.publish(secondary.plain, stamped);
      if (eventSecondaries > 0) via.publish(secondary.events, stamped);
    }
    recipients += secondaries;
  }
  ctx.slowConsumers.delivered(local.sockets);
  record(ctx, publication, excluded ? recipients - 1 : recipients);
}

type Publisher = { publish(topic: string, message: string | Uint8Array, isBinary?: boolean): unknown };

/** Publishes one variant to its local topic when it has subscribers; returns how many. */
function publishVariant(
  ctx: GatewayContext,
  via: Publisher,
  topicName: string,
  frame: string | Uint8Array,
  binary = false,
): number {
  const subscribers = ctx.transport.numSubscribers(topicName);
  if (subscribers > 0) via.publish(topicName, frame, binary);
  return subscribers;
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
