import type { JoinResult, LeaveResult, Topic } from '@switchboard/core';
import { memberOf } from './connection';
import type { ConnectionState, Subscription } from './connection';
import { publishToChannel } from '../fanout/events';
import { sendTo } from '../fanout/send';
import type { EventDeps } from '../fanout/events';
import type { NodeDeps, NodeStatus } from '../deps';
import type { Dialects } from '../protocols/registry';
import type { EarlyJoins } from './early-joins';
import type { ListGate } from '../fanout/list-gate';

/** What the presence flow takes. */
export interface PresenceDeps extends NodeDeps, EventDeps {
  readonly dialects: Dialects;
  readonly earlyJoins: EarlyJoins;
  readonly status: NodeStatus;
  /** The node's repair (`Repair`), asked for when a presence write failed. */
  readonly repair: { repairSoon(): void };
  /** Holds the channel's frames from a presence subscription until its member list is sent. */
  readonly listGate: ListGate;
}

/**
 * The activity clock: milliseconds with sub-millisecond resolution, so joins and messages in
 * the same millisecond still order as they happened ("most recently active").
 */
export const activityNow = (): number => performance.timeOrigin + performance.now();

/** Writes `sub`'s presence entry and reads what the joiner is sent, as its dialect lists members. */
function writeJoin(
  ctx: PresenceDeps,
  state: ConnectionState,
  sub: Subscription,
  now: number,
  maxIdentities?: number,
): Promise<JoinResult> {
  return ctx.engine.presence.join(
    sub.topic,
    { connId: state.id, nodeId: ctx.nodeId, member: memberOf(sub) },
    now,
    {
      of: state.dialect.presence.listing,
      limit: state.dialect.presence.listLimit?.(ctx.config) ?? ctx.config.limits.rosterLimit,
      ...(maxIdentities === undefined ? {} : { maxIdentities }),
    },
  );
}

/**
 * A subscription's member limit (Pusher's members per presence channel): the presence store
 * checks it atomically with the join; `refused` runs instead of the join's announcements when
 * the channel was full (nothing was written).
 */
export interface MemberLimit {
  readonly maxIdentities: number;
  refused(identityCount: number): void;
}

/**
 * Presence (docs/protocol.md). V3: full rosters (the `ROSTER_LIMIT` most recently active) in every event,
 * one event per connection. V4: deltas, one `member_joined`/`member_left` per identity (a user
 * with several connections joins once and leaves once).
 *
 * A new connection's primary subscription was usually joined during admission (`EarlyJoins`):
 * its join is taken over here, else written now. Once answered, the joiner gets its list, then
 * the channel's frames (fanout/list-gate.ts: its first presence frame is its list), and the channel hears
 * of its arrival, even when it closed meanwhile: its leave (`leaveChannel`) waits
 * for the join (`sub.joining`) and follows it, so the channel's events stay consistent.
 */
export function joinPresence(
  ctx: PresenceDeps,
  state: ConnectionState,
  sub: Subscription,
  limit?: MemberLimit,
): Promise<void> {
  // Early joins are of primary channels, which no limited dialect has.
  const early = limit ? undefined : ctx.earlyJoins.take(state, sub);
  const joining = early
    ? early.settled.then((joined) => (joined ? { joined, now: early.now } : joinNow(ctx, state, sub)))
    : joinNow(ctx, state, sub, limit?.maxIdentities);
  sub.joining = joining;
  return joining.then(
    ({ joined, now }) => {
      if (sub.joining === joining) sub.joining = undefined;
      if (joined.refused) {
        ctx.listGate.release(state, sub);
        return limit?.refused(joined.identityCount);
      }
      announceJoin(ctx, state, sub, joined, now);
    },
    (error: unknown) => {
      // No list to wait for: the subscription gets the channel's frames without one.
      ctx.listGate.release(state, sub);
      throw error;
    },
  );
}

function joinNow(
  ctx: PresenceDeps,
  state: ConnectionState,
  sub: Subscription,
  maxIdentities?: number,
): Promise<{ joined: JoinResult; now: number }> {
  const now = activityNow();
  return writeJoin(ctx, state, sub, now, maxIdentities).then((joined) => ({ joined, now }));
}

/** Sends the joiner its list (when it has a socket) and tells the channel who arrived. */
function announceJoin(
  ctx: PresenceDeps,
  state: ConnectionState,
  sub: Subscription,
  joined: JoinResult,
  now: number,
): void {
  sub.touchedAt = now;
  const member = memberOf(sub);
  const { members, total } = joined.listed ?? { members: [], total: 0 };
  const { presence } = state.dialect;
  sendTo(ctx, state, presence.memberList(sub, members, total));
  ctx.listGate.release(state, sub);
  const event = presence.joined(sub, member, joined);
  if (!event) return;
  if (event.excludesSubject && state.conn && !state.closed)
    void publishToChannel(ctx, sub.topic, event.body, { stampable: event.stampable, sender: state });
  else void publishToChannel(ctx, sub.topic, event.body, { stampable: event.stampable });
}

/**
 * Joins a new connection's primary subscription during admission, when it has presence (and no
 * recovery, whose history read must come first): `EarlyJoins`. The upgrade does not wait for it.
 */
export function joinEarly(ctx: PresenceDeps, state: ConnectionState): void {
  const sub = state.subs.get(state.primary);
  if (!sub?.presence || sub.recover || ctx.status.draining) return;
  const now = activityNow();
  ctx.earlyJoins.start(state, sub, now, writeJoin(ctx, state, sub, now), (error) =>
    ctx.logger.debug({ err: error }, 'presence join during admission failed; joining at open'),
  );
}

/**
 * A connection whose upgrade was abandoned (the client went away) after its early join: once
 * the join is answered it is announced and then left, as a socket that opened and closed at once
 * would be, so the channel's events stay consistent (another tab of the same user may have joined
 * after it, unannounced).
 */
export function abandonEarlyJoin(ctx: PresenceDeps, state: ConnectionState): void {
  const early = ctx.earlyJoins.abandon(state);
  if (!early) return;
  void early.settled.then((joined) => {
    // While the node drains, its presence is removed wholesale, this entry with it.
    if (!joined || ctx.status.draining) return;
    announceJoin(ctx, state, early.sub, joined, early.now);
    leavePresence(ctx, state.id, early.sub).catch((error: unknown) => {
      ctx.logger.warn({ err: error }, "presence leave failed; this node's share is rewritten to the engine");
      ctx.repair.repairSoon();
    });
  });
}

export async function leavePresence(ctx: PresenceDeps, connId: string, sub: Subscription): Promise<void> {
  const left = await ctx.engine.presence.leave(sub.topic, connId);
  if (left) await publishLeave(ctx, sub.topic, left);
}

/**
 * Announces a removal from a topic's presence, as its dialect does (V3: every leave; V4: an
 * identity's last). A topic of a family no dialect here speaks (a dead node's, of a newer
 * version) is not announced.
 */
export async function publishLeave(ctx: PresenceDeps, topic: Topic, left: LeaveResult): Promise<void> {
  const presence = ctx.dialects.find(topic.protocol)?.presence;
  if (!presence) return;
  const roster = presence.leaveCarriesRoster
    ? (await ctx.engine.presence.roster(topic, ctx.config.limits.rosterLimit)).members
    : undefined;
  const event = presence.left(topic, left, roster);
  if (event) await publishToChannel(ctx, topic, event.body, { stampable: event.stampable });
}

/** Records activity for the "most recently active" order; at most one write per second per subscription. */
export function touchPresence(ctx: PresenceDeps, state: ConnectionState, sub: Subscription): void {
  if (!sub.presence) return;
  const now = activityNow();
  if (now - sub.touchedAt < 1000) return;
  sub.touchedAt = now;
  ctx.engine.presence.touch(sub.topic, state.id, now).catch(() => undefined);
}
