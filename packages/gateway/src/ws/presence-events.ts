import type { LeaveResult, Topic } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { memberOf } from './connection';
import type { ConnectionState, Subscription } from './connection';
import { publishToChannel, sendChannelFrame } from './events';
import { v4Event } from './frames';
import { sendTo } from './send';

/**
 * The activity clock: milliseconds with sub-millisecond resolution, so joins and messages in
 * the same millisecond still order as they happened ("most recently active").
 */
export const activityNow = (): number => performance.timeOrigin + performance.now();

/**
 * Presence (docs/protocol.md). V3: full rosters (the `ROSTER_LIMIT` most recently active) in every event,
 * one event per connection. V4: deltas, one `member_joined`/`member_left` per identity (a user
 * with several connections joins once and leaves once).
 */
export async function joinPresence(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
): Promise<void> {
  const { presence } = ctx.engine;
  const now = activityNow();
  const v3 = sub.topic.protocol === 'v3';
  const limit = ctx.config.limits.rosterLimit;
  const member = memberOf(sub);
  const joined = await presence.join(sub.topic, { connId: state.id, nodeId: ctx.nodeId, member }, now, {
    of: v3 ? 'entries' : 'identities',
    limit,
  });
  sub.touchedAt = now;
  if (state.closed || state.subs.get(sub.channel) !== sub) {
    // Closed or unsubscribed while the join was in flight: the leave already ran and found nothing.
    await presence.leave(sub.topic, state.id);
    return;
  }
  const { members, total } = joined.listed ?? { members: [], total: 0 };
  if (v3) {
    sendTo(ctx, state, JSON.stringify({ event: 'system:member_list', data: { members } }));
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
  if (joined.firstOfIdentity) {
    const event = v4Event('system::member_joined', {
      channel: sub.channel,
      member,
      count: joined.identityCount,
    });
    void publishToChannel(ctx, sub.topic, event, { stampable: true });
  }
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
