import type { Config, Publication } from '@switchboard/core';
import { topicId } from '@switchboard/core';
import type { ConnectionState, Subscription } from '../connections/connection';
import { sendTo } from './send';
import { localTopicOf } from './topics';

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

/**
 * The first presence frame a subscription gets is its `member_list` (docs/protocol.md,
 * "Presence"): the join is written after the socket is in the channel (an upgrade never waits
 * for it), and events of other members can reach this node before the join's answer does.
 * Until its list is sent, the subscription is not in its uWS topic; delivery hands this gate
 * the channel's frames instead (`offer`), which sends messages at once and holds presence events
 * (the only publications without a `source`) until `release`, after the list.
 *
 * `hold` replaces the uWS subscription a presence subscription would make: the plain topic, or
 * for an opted-in one its events topic (its stream publications keep their own topic).
 */
export class ListGate {
  /** Topic → its subscriptions waiting for their list on this node. */
  private readonly gate = new Map<string, Set<Waiting>>();
  /** Subscriptions waiting: a delivery costs one comparison while none do. */
  private waitingCount = 0;

  constructor(private readonly deps: { readonly config: Config }) {}

  hold(state: ConnectionState, sub: Subscription): void {
    const id = topicId(sub.topic);
    let waiting = this.gate.get(id);
    if (!waiting) {
      waiting = new Set();
      this.gate.set(id, waiting);
    }
    waiting.add({ state, sub, held: [] });
    this.waitingCount++;
  }

  /** The list was sent (or the join failed): the subscription joins its uWS topic, then gets what was held. */
  release(state: ConnectionState, sub: Subscription): void {
    const entry = this.take(state, sub);
    if (!entry || state.closed || state.subs.get(sub.channel) !== sub) return;
    state.conn?.subscribe(
      localTopicOf(state.dialect.variants, sub.topic, sub.primary, sub.recover ? 'events' : 'plain'),
    );
    for (const publication of entry.held) sendTo(this.deps, state, frameFor(state, sub, publication));
  }

  /** The subscription ended before its list was sent. */
  forget(state: ConnectionState, sub: Subscription): void {
    this.take(state, sub);
  }

  /**
   * A publication delivery is handing to the channel: sent now to each waiting subscription that
   * its uWS topic would have reached, or held when it is a presence event. `streamed`: it goes to
   * opted-in subscriptions through their stream topic instead.
   */
  offer(
    publication: Publication,
    frame: string | Uint8Array,
    binary: boolean,
    streamed: boolean,
    excluded: ConnectionState | undefined,
  ): void {
    if (this.waitingCount === 0) return;
    const waiting = this.gate.get(topicId(publication.topic));
    if (!waiting) return;
    for (const entry of waiting) {
      const { state, sub } = entry;
      if (state === excluded || (sub.recover && streamed)) continue;
      if (publication.source !== undefined) {
        if (binary) sendTo(this.deps, state, frame, true);
        else sendTo(this.deps, state, frameFor(state, sub, publication));
        continue;
      }
      entry.held.push(publication);
      if (entry.held.length >= HELD_EVENTS_LIMIT) this.release(state, sub);
    }
  }

  private take(state: ConnectionState, sub: Subscription): Waiting | undefined {
    const id = topicId(sub.topic);
    const waiting = this.gate.get(id);
    if (!waiting) return undefined;
    for (const entry of waiting) {
      if (entry.state !== state || entry.sub !== sub) continue;
      waiting.delete(entry);
      this.waitingCount--;
      if (waiting.size === 0) this.gate.delete(id);
      return entry;
    }
    return undefined;
  }
}

/** What the subscription's uWS topic carries for `publication`: stamped on a secondary. */
function frameFor(state: ConnectionState, sub: Subscription, publication: Publication): string {
  return !sub.primary && publication.stampable
    ? state.dialect.stamp(publication.body, sub.channel)
    : publication.body;
}
