import type { GatewayContext } from '../context';
import type { ConnectionState, Subscription } from './connection';
import { joinPresence, leavePresence } from './presence-events';
import type { Resume } from '../history/resume';
import type { CatchUp } from '../history/streams';
import { localTopicOf } from './topics';

const logFailure = (ctx: GatewayContext, what: string) => (error: unknown) =>
  ctx.logger.warn({ err: error }, `${what} failed; it is rewritten when the engine is back`);

/**
 * Puts a subscription in place on an open connection (its broker subscription is already
 * acquired): registry, count, local topic, then `acknowledge` (V4 `subscribe_success`, which
 * must precede the member list), then presence and its events.
 *
 * An opted-in subscription (`sub.recover`) first reads history; its `system::position` and the
 * publications it missed follow `acknowledge` in the same turn, before anything else of the
 * channel. When that read fails (engine unreachable) this rejects and the caller takes the
 * subscription down with `leaveChannel`, as for any other entered subscription.
 */
export async function enterChannel(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  acknowledge?: () => void,
  resume?: Resume,
): Promise<void> {
  state.subs.set(sub);
  ctx.registry.joinTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol].inc();
  ctx.engine.counts.increment(ctx.nodeId, state.key, sub.channel).catch(logFailure(ctx, 'count increment'));
  let catchUp: CatchUp | undefined;
  if (sub.recover) {
    catchUp = await ctx.streams.prepare(state, sub, resume);
    // Closed or unsubscribed while history was read: `leaveChannel` already took it down.
    if (state.closed || state.subs.get(sub.channel) !== sub) return;
  } else {
    state.conn?.subscribe(localTopicOf(sub.topic, sub.primary));
  }
  acknowledge?.();
  if (catchUp) ctx.streams.start(catchUp);
  if (sub.presence) await joinPresence(ctx, state, sub).catch(logFailure(ctx, 'presence join'));
}

/**
 * Takes a subscription down: the reverse of `enterChannel`, including `member_left`. While the
 * node drains, its presence and counts were already removed wholesale and are left alone.
 */
export async function leaveChannel(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
): Promise<void> {
  if (!state.closed) {
    if (!sub.recover) state.conn?.unsubscribe(localTopicOf(sub.topic, sub.primary));
    else {
      state.conn?.unsubscribe(localTopicOf(sub.topic, sub.primary, 'events'));
      state.conn?.unsubscribe(localTopicOf(sub.topic, sub.primary, 'stream'));
    }
  }
  if (sub.recover) ctx.streams.detach(state, sub);
  state.subs.delete(sub.channel);
  ctx.registry.leaveTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol].dec();
  ctx.subscriptions.release(sub.topic);
  if (ctx.status.draining) return;
  ctx.engine.counts.decrement(ctx.nodeId, state.key, sub.channel).catch(logFailure(ctx, 'count decrement'));
  if (!sub.presence) return;
  await leavePresence(ctx, state.id, sub).catch(logFailure(ctx, 'presence leave'));
}
