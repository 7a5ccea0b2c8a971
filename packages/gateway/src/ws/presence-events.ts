import type { JoinResult, LeaveResult, Topic } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { memberOf } from './connection';
import type { ConnectionState, Subscription } from './connection';
import { publishToChannel, sendChannelFrame } from './events';
import { v4Event } from './frames';
import { releaseAfterList } from './list-gate';
import { sendTo } from './send';

/**
 * The activity clock: milliseconds with sub-millisecond resolution, so joins and messages in
 * the same millisecond still order as they happened ("most recently active").
 */
export const activityNow = (): number => performance.timeOrigin + performance.now();

/** Writes `sub`'s presence entry and reads what the joiner is sent: the list, or the roster for V3. */
function writeJoin(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  now: number,
): Promise<JoinResult> {
  return ctx.engine.presence.join(
    sub.topic,
    { connId: state.id, nodeId: ctx.nodeId, member: memberOf(sub) },
    now,
    { of: sub.topic.protocol === 'v3' ? 'entries' : 'identities', limit: ctx.config.limits.rosterLimit },
  );
}

/**
 * Presence (docs/protocol.md). V3: full rosters (the `ROSTER_LIMIT` most recently active) in every event,
 * one event per connection. V4: deltas, one `member_joined`/`member_left` per identity (a user
 * with several connections joins once and leaves once).
 *
 * A new connection's primary subscription was usually joined during admission (`EarlyJoins`):
 * its join is taken over here, else written now. Once answered, the joiner gets its list, then
 * the channel's frames (list-gate.ts: its first presence frame is its list), and the channel hears
 * of its arrival, even when it closed meanwhile: its leave (`leaveChannel`) waits
 * for the join (`sub.joining`) and follows it, so the channel's events stay consistent.
 */
export function joinPresence(ctx: GatewayContext, state: ConnectionState, sub: Subscription): Promise<void> {
  const early = ctx.earlyJoins.take(state, sub);
  const joining = early
    ? early.settled.then((joined) => (joined ? { joined, now: early.now } : joinNow(ctx, state, sub)))
    : joinNow(ctx, state, sub);
  sub.joining = joining;
  return joining.then(
    ({ joined, now }) => {
      if (sub.joining === joining) sub.joining = undefined;
      announceJoin(ctx, state, sub, joined, now);
    },
    (error: unknown) => {
      // No list to wait for: the subscription gets the channel's frames without one.
      releaseAfterList(ctx, state, sub);
      throw error;
    },
  );
}

function joinNow(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
): Promise<{ joined: JoinResult; now: number }> {
  const now = activityNow();
  return writeJoin(ctx, state, sub, now).then((joined) => ({ joined, now }));
}

/** Sends the joiner its list (when it has a socket) and tells the channel who arrived. */
function announceJoin(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  joined: JoinResult,
  now: number,
): void {
  sub.touchedAt = now;
  const member = memberOf(sub);
  const { members, total } = joined.listed ?? { members: [], total: 0 };
  if (sub.topic.protocol === 'v3') {
    sendTo(ctx, state, JSON.stringify({ event: 'system:member_list', data: { members } }));
    releaseAfterList(ctx, state, sub);
    const joinedEvent = JSON.stringify({
      event: 'system:member_joined',
      data: { member, members },
    });
    void publishToChannel(ctx, sub.topic, joinedEvent, { stampable: false });
    return;
  }
  sendChannelFrame(
    ctx,
    state,
    sub,
    v4Event('system::member_list', { channel: sub.channel, members, count: total }),
  );
  releaseAfterList(ctx, state, sub);
  if (joined.firstOfIdentity) {
    const event = v4Event('system::member_joined', {
      channel: sub.channel,
      member,
      count: joined.identityCount,
    });
    void publishToChannel(ctx, sub.topic, event, { stampable: true });
  }
}

/**
 * Joins a new connection's primary subscription during admission, when it has presence (and no
 * recovery, whose history read must come first): `EarlyJoins`. The upgrade does not wait for it.
 */
export function joinEarly(ctx: GatewayContext, state: ConnectionState): void {
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
export function abandonEarlyJoin(ctx: GatewayContext, state: ConnectionState): void {
  const early = ctx.earlyJoins.abandon(state);
  if (!early) return;
  void early.settled.then((joined) => {
    // While the node drains, its presence is removed wholesale, this entry with it.
    if (!joined || ctx.status.draining) return;
    announceJoin(ctx, state, early.sub, joined, early.now);
    leavePresence(ctx, state.id, early.sub).catch((error: unknown) => {
      ctx.logger.warn({ err: error }, "presence leave failed; this node's share is rewritten to the engine");
      ctx.recovery.repairSoon();
    });
  });
}

export async function leavePresence(ctx: GatewayContext, connId: string, sub: Subscription): Promise<void> {
  const left = await ctx.engine.presence.leave(sub.topic, connId);
  if (left) await publishLeave(ctx, sub.topic, left);
}

/** Announces a removal from a topic's presence: every V3 leave, a V4 identity's last leave. */
export async function publishLeave(ctx: GatewayContext, topic: Topic, left: LeaveResult): Promise<void> {
  if (topic.protocol === 'v3') {
    const { members } = await ctx.engine.presence.roster(topic, ctx.config.limits.rosterLimit);
    const event = JSON.stringify({ event: 'system:member_left', data: { member: left.member, members } });
    await publishToChannel(ctx, topic, event, { stampable: false });
    return;
  }
  if (left.lastOfIdentity) {
    const event = v4Event('system::member_left', {
      channel: topic.channel,
      member: left.member,
      count: left.identityCount,
    });
    await publishToChannel(ctx, topic, event, { stampable: true });
  }
}

/** Records activity for the "most recently active" order; at most one write per second per subscription. */
export function touchPresence(ctx: GatewayContext, state: ConnectionState, sub: Subscription): void {
  if (!sub.presence) return;
  const now = activityNow();
  if (now - sub.touchedAt < 1000) return;
  sub.touchedAt = now;
  ctx.engine.presence.touch(sub.topic, state.id, now).catch(() => undefined);
}
