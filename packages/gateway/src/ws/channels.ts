import type { GatewayContext } from '../context';
import type { ConnectionState, Subscription } from './connection';
import { joinPresence, leavePresence } from './presence-events';
import { localTopicOf } from './topics';

const logFailure = (ctx: GatewayContext, what: string) => (error: unknown) =>
  ctx.logger.warn({ err: error }, `${what} failed; it is rewritten when the engine is back`);

/**
 * Puts a subscription in place on an open connection (its broker subscription is already
 * acquired): local topic, registry, count, then `acknowledge` (V4 `subscribe_success`, which
 * must precede the member list), then presence and its events.
 */
export async function enterChannel(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  acknowledge?: () => void,
): Promise<void> {
  state.subs.set(sub);
  state.conn?.subscribe(localTopicOf(sub.topic, sub.primary));
  ctx.registry.joinTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol].inc();
  ctx.engine.counts.increment(ctx.nodeId, state.key, sub.channel).catch(logFailure(ctx, 'count increment'));
  acknowledge?.();
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
  if (!state.closed) state.conn?.unsubscribe(localTopicOf(sub.topic, sub.primary));
  state.subs.delete(sub.channel);
  ctx.registry.leaveTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol].dec();
  ctx.subscriptions.release(sub.topic);
  if (ctx.status.draining) return;
  ctx.engine.counts.decrement(ctx.nodeId, state.key, sub.channel).catch(logFailure(ctx, 'count decrement'));
  if (!sub.presence) return;
  await leavePresence(ctx, state.id, sub).catch(logFailure(ctx, 'presence leave'));
}
