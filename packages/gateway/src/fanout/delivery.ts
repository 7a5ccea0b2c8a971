import type { Config, Publication, Topic } from '@switchboard/core';
import type { ConnectionState } from '../connections/connection';
import type { Meters } from '../meters';
import type { PositionReport } from '../streams/topic-stream';
import type { Transport } from '../transport/types';
import type { ListGate } from './list-gate';
import type { Registry } from './registry';
import { sendTo } from './send';
import type { SlowConsumers } from './slow-consumers';

/** What delivery works with: this node's sockets and topics, and where it counts. */
export interface DeliveryDeps {
  readonly config: Config;
  /** The transport's topic publishing (a getter: the transport is made after its handlers). */
  readonly transport: Pick<Transport, 'publish' | 'numSubscribers'>;
  readonly registry: Registry;
  readonly slowConsumers: SlowConsumers;
  readonly meters: Meters;
  /** Presence subscriptions whose member list is not sent yet are reached from here (list-gate.ts). */
  readonly listGate: ListGate;
}

type Publisher = { publish(topic: string, message: string | Uint8Array, isBinary?: boolean): unknown };

/**
 * The one delivery service of this node: publications to plain subscribers, and the ordered
 * streams' publications and positions to opted-in ones (docs/protocol.md, "History and
 * recovery"). Each variant of the topic's dialect (a primary; a secondary, stamped) is built once
 * and handed to a uWS topic, which does the per-recipient work in C++. A local sender whose
 * `notify_self` is off is excluded by publishing through its own socket (uWS skips the publisher).
 */
export class Delivery {
  constructor(private readonly deps: DeliveryDeps) {}

  /**
   * Delivers a publication to this node's connections. `streamed`: the publication is (or is
   * about to be) part of its topic's stream, so opted-in subscriptions get it from there instead
   * (`deliverInOrder`).
   */
  deliver(
    publication: Publication,
    sender?: ConnectionState,
    streamed: boolean = publication.offset !== undefined,
  ): void {
    if (publication.to !== undefined) {
      this.deliverDirect(publication, sender);
      return;
    }
    const { transport, registry, slowConsumers } = this.deps;
    const { topic } = publication;
    const local = registry.local(topic);
    if (!local) return; // no socket of this node is in the channel
    const { names, dialect } = local;
    const { primary, secondary } = names;
    const excluded = sender && !sender.notifySelf && sender.conn ? sender.conn : undefined;
    const via = excluded ?? transport;
    // Opted-in subscriptions get stream publications from their stream, in offset order; every
    // other frame (presence events, binary) also goes to their events topic.
    const events = !streamed;
    const binary = publication.binary === true && dialect.binaryFrames;
    const frame = binary ? Buffer.from(publication.body, 'base64') : publication.body;
    // Presence subscriptions whose member_list is not sent yet are reached from here (list-gate.ts).
    this.deps.listGate.offer(
      publication,
      frame,
      binary,
      streamed,
      sender && !sender.notifySelf ? sender : undefined,
    );
    let recipients = this.publishVariant(via, primary.plain, frame, binary);
    if (events) this.publishVariant(via, primary.events, frame, binary);
    if (secondary) {
      const secondaries = transport.numSubscribers(secondary.plain);
      const eventSecondaries = events ? transport.numSubscribers(secondary.events) : 0;
      if (secondaries + eventSecondaries > 0) {
        const stamped = publication.stampable
          ? dialect.stamp(publication.body, topic.channel)
          : publication.body;
        if (secondaries > 0) via.publish(secondary.plain, stamped);
        if (eventSecondaries > 0) via.publish(secondary.events, stamped);
      }
      recipients += secondaries;
    }
    slowConsumers.delivered(local.sockets);
    this.record(publication, excluded ? recipients - 1 : recipients);
  }

  /**
   * A stream publication, in offset order, to the caught-up subscribers' stream topics, with its
   * offset spliced in; `sender` (when it is a local connection) excluded unless it asked for its own.
   */
  deliverInOrder(topic: Topic, publication: Publication, sender: ConnectionState | undefined): void {
    const { transport, registry, slowConsumers } = this.deps;
    const local = registry.local(topic);
    if (!local) return;
    const via = sender && !sender.notifySelf && sender.conn ? sender.conn : transport;
    const offset = publication.offset ?? 0;
    const { dialect } = local;
    const isObject = dialect.isObject(publication);
    const { primary, secondary } = local.names;
    slowConsumers.delivered(local.sockets);
    if (!secondary) {
      via.publish(primary.stream, dialect.offsetFrame(publication, isObject, offset));
      return;
    }
    if (transport.numSubscribers(primary.stream) > 0)
      via.publish(primary.stream, dialect.offsetFrame(publication, isObject, offset));
    if (transport.numSubscribers(secondary.stream) > 0)
      via.publish(secondary.stream, dialect.offsetFrame(publication, isObject, offset, topic.channel));
  }

  /** A stream's new position, to its caught-up subscribers' stream topics. */
  announce(topic: Topic, report: PositionReport): void {
    const { transport, registry, slowConsumers } = this.deps;
    const local = registry.local(topic);
    if (!local) return;
    const { names, dialect } = local;
    const { primary, secondary } = names;
    slowConsumers.delivered(local.sockets);
    if (!secondary) {
      transport.publish(primary.stream, dialect.positionFrame(topic.channel, report));
      return;
    }
    transport.publish(primary.stream, dialect.positionFrame(topic.channel, report));
    transport.publish(secondary.stream, dialect.positionFrame(topic.channel, report, topic.channel));
  }

  /** Publishes one variant to its local topic when it has subscribers; returns how many. */
  private publishVariant(
    via: Publisher,
    topicName: string,
    frame: string | Uint8Array,
    binary = false,
  ): number {
    const subscribers = this.deps.transport.numSubscribers(topicName);
    if (subscribers > 0) via.publish(topicName, frame, binary);
    return subscribers;
  }

  /** Deliveries and publish-to-delivery latency of messages (presence events have no source). */
  private record(publication: Publication, recipients: number): void {
    const { source, acceptedAt } = publication;
    if (!source || recipients <= 0) return;
    const { meters } = this.deps;
    const { protocol } = publication.topic;
    meters.messagesOut[protocol]?.[source].inc(recipients);
    if (acceptedAt !== undefined)
      meters.deliveryLatency(protocol, Math.max(0, Date.now() - acceptedAt) / 1000);
  }

  /**
   * A direct message (V4 `system::to`): only the channel's connections whose `user` equals the
   * target receive it; the sender only when it is a target and its `notify_self` is on.
   */
  private deliverDirect(publication: Publication, sender?: ConnectionState): void {
    const { topic } = publication;
    let stamped: string | undefined;
    for (const state of this.deps.registry.inTopic(topic)) {
      const sub = state.subs.get(topic.channel);
      if (!sub || sub.userIdentity !== publication.to) continue;
      if (state === sender && !state.notifySelf) continue;
      if (sub.primary || !publication.stampable) sendTo(this.deps, state, publication.body);
      else sendTo(this.deps, state, (stamped ??= state.dialect.stamp(publication.body, topic.channel)));
    }
  }
}
