import type { Publication } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { ConnectionState, Subscription } from './connection';
import { stampChannel } from './frames';
import { sendTo } from './send';
import { localTopicOf, topicKey } from './topics';

/**
 * Presence events a subscription may hold before its `member_list` is sent: past this, what it
 * holds is sent and it goes live (events are never dropped; only their order after the list is
 * given up, for a join that took that long).
 */
export const HELD_EVENTS_LIMIT = 1000;

/** A presence subscription whose `member_list` is not sent yet. */
interface Waiting {
  readonly state: ConnectionState;
  readonly sub: Subscription;
  readonly held: Publication[];
}

/** Per gateway: topic → its subscriptions waiting for their list on this node. */
const gates = new WeakMap<GatewayContext, Map<string, Set<Waiting>>>();
/** Subscriptions waiting in this process, every gateway's: a delivery costs one comparison while none do. */
let waitingCount = 0;

const gateOf = (ctx: GatewayContext): Map<string, Set<Waiting>> => {
  let gate = gates.get(ctx);
  if (!gate) {
    gate = new Map();
    gates.set(ctx, gate);
  }
  return gate;
};

/**
 * The first presence frame a subscription gets is its `member_list` (docs/protocol.md,
 * "Presence"): the join is written after the socket is in the channel (an upgrade never waits
 * for it), and events of other members can reach this node before the join's answer does.
 * Until its list is sent, the subscription is not in its uWS topic; `deliverLocal` hands this
 * gate the channel's frames instead, which sends messages at once and holds presence events
 * (the only publications without a `source`) until `release`, after the list.
 *
 * `hold` replaces the uWS subscription a presence subscription would make: the plain topic, or
 * for an opted-in one its events topic (its stream publications keep their own topic).
 */
export function holdUntilList(ctx: GatewayContext, state: ConnectionState, sub: Subscription): void {
  const gate = gateOf(ctx);
  const id = topicKey(sub.topic);
  let waiting = gate.get(id);
  if (!waiting) {
    waiting = new Set();
    gate.set(id, waiting);
  }
  waiting.add({ state, sub, held: [] });
  waitingCount++;
}

/** The list was sent (or the join failed): the subscription joins its uWS topic, then gets what was held. */
export function releaseAfterList(ctx: GatewayContext, state: ConnectionState, sub: Subscription): void {
  const entry = take(ctx, state, sub);
  if (!entry || state.closed || state.subs.get(sub.channel) !== sub) return;
  state.conn?.subscribe(localTopicOf(sub.topic, sub.primary, sub.recover ? 'events' : 'plain'));
  for (const publication of entry.held) sendTo(ctx, state, frameFor(sub, publication));
}

/** The subscription ended before its list was sent. */
export function forgetWaiting(ctx: GatewayContext, state: ConnectionState, sub: Subscription): void {
  take(ctx, state, sub);
}

/**
 * A publication `deliverLocal` is delivering to the channel: sent now to each waiting
 * subscription that its uWS topic would have reached, or held when it is a presence event.
 * `streamed`: it goes to opted-in subscriptions through their stream topic instead.
 */
export function offerToWaiting(
  ctx: GatewayContext,
  publication: Publication,
  frame: string | Uint8Array,
  binary: boolean,
  streamed: boolean,
  excluded: ConnectionState | undefined,
): void {
  if (waitingCount === 0) return;
  const gate = gates.get(ctx);
  if (!gate || gate.size === 0) return;
  const waiting = gate.get(topicKey(publication.topic));
  if (!waiting) return;
  for (const entry of waiting) {
    const { state, sub } = entry;
    if (state === excluded || (sub.recover && streamed)) continue;
    if (publication.source !== undefined) {
      if (binary) sendTo(ctx, state, frame, true);
      else sendTo(ctx, state, frameFor(sub, publication));
      continue;
    }
    entry.held.push(publication);
    if (entry.held.length >= HELD_EVENTS_LIMIT) releaseAfterList(ctx, state, sub);
  }
}

/** What the subscription's uWS topic carries for `publication`: stamped on a V4 secondary. */
function frameFor(sub: Subscription, publication: Publication): string {
  return !sub.primary && publication.stampable
    ? stampChannel(publication.body, sub.channel)
    : publication.body;
}

function take(ctx: GatewayContext, state: ConnectionState, sub: Subscription): Waiting | undefined {
  const gate = gates.get(ctx);
  const id = topicKey(sub.topic);
  const waiting = gate?.get(id);
  if (!waiting) return undefined;
  for (const entry of waiting) {
    if (entry.state !== state || entry.sub !== sub) continue;
    waiting.delete(entry);
    waitingCount--;
    if (waiting.size === 0) gate!.delete(id);
    return entry;
  }
  return undefined;
}
