import { countFamilyOf } from '@switchboard/core';
import type { ConnectionState, Subscription } from './connection';
import { joinPresence, leavePresence } from './presence-events';
import type { Resume } from '../streams/resume';
import type { CatchUp } from '../streams/streams';
import { localTopicOf } from '../fanout/topics';
import type { Meters } from '../meters';
import type { Registry } from '../fanout/registry';
import type { BrokerSubscriptions } from '../fanout/broker-subscriptions';
import type { Streams } from '../streams/streams';
import type { MemberLimit, PresenceDeps } from './presence-events';
import type { CountEvents } from '../fanout/count-events';

/** What entering and leaving channels takes. */
export interface ChannelDeps extends PresenceDeps {
  readonly meters: Meters;
  readonly registry: Registry;
  readonly subscriptions: BrokerSubscriptions;
  readonly streams: Streams;
  /** Announces counted channels' subscription counts (`Dialect.countEvents`). */
  readonly countEvents: CountEvents;
}

type FailureLog = (error: unknown) => void;

/**
 * A count or presence write that failed is not retried on its own: the node rewrites its whole
 * share instead (`Repair`), when the engine is back or, if it never went away (a timeout, an
 * error reply), shortly after.
 */
const logFailure =
  (ctx: ChannelDeps, what: string): FailureLog =>
  (error: unknown) => {
    ctx.logger.warn({ err: error }, `${what} failed; this node's share is rewritten to the engine`);
    ctx.repair.repairSoon();
  };

/** The failure loggers of a gateway, made once rather than a closure per subscription. */
const loggers = new WeakMap<
  ChannelDeps,
  { increment: FailureLog; decrement: FailureLog; join: FailureLog; leave: FailureLog }
>();

function failures(ctx: ChannelDeps) {
  let found = loggers.get(ctx);
  if (!found) {
    found = {
      increment: logFailure(ctx, 'count increment'),
      decrement: logFailure(ctx, 'count decrement'),
      join: logFailure(ctx, 'presence join'),
      leave: logFailure(ctx, 'presence leave'),
    };
    loggers.set(ctx, found);
  }
  return found;
}

/**
 * Puts a subscription in place on an open connection (its broker subscription is already
 * acquired): registry, count, local topic, then `acknowledge` (a subscribe's success answer,
 * which must precede the member list), then presence and its events.
 *
 * An opted-in subscription (`sub.recover`) first reads history; its `system::position` and the
 * publications it missed follow `acknowledge` in the same turn, before anything else of the
 * channel. When that read fails (engine unreachable) this rejects and the caller takes the
 * subscription down with `leaveChannel`, as for any other entered subscription.
 *
 * A plain subscription (no recovery, no presence) is in place on return, with no promise: the
 * common connection costs no microtask. Otherwise the returned promise settles when the
 * subscription is complete (presence failures are logged, never rejected).
 */
export function enterChannel(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  acknowledge?: () => void,
  resume?: Resume,
  limit?: MemberLimit,
): Promise<void> | undefined {
  state.subs.set(sub);
  ctx.registry.joinTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol]?.inc();
  const written = ctx.engine.counts.increment(
    ctx.nodeId,
    state.key,
    sub.channel,
    countFamilyOf(sub.topic.protocol),
  );
  written.catch(failures(ctx).increment);
  if (sub.recover) return enterRecovering(ctx, state, sub, acknowledge, resume, limit, written);
  // A presence subscription joins its uWS topic once its member_list is sent (fanout/list-gate.ts).
  if (sub.presence) ctx.listGate.hold(state, sub);
  else state.conn?.subscribe(localTopicOf(state.dialect.variants, sub.topic, sub.primary));
  acknowledge?.();
  countChanged(ctx, state, sub, written, true);
  if (sub.presence) return joinPresence(ctx, state, sub, limit).catch(failures(ctx).join);
  return undefined;
}

async function enterRecovering(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  acknowledge: (() => void) | undefined,
  resume: Resume | undefined,
  limit: MemberLimit | undefined,
  written: Promise<void>,
): Promise<void> {
  const catchUp: CatchUp = await ctx.streams.prepare(state, sub, resume);
  // Closed or unsubscribed while history was read: `leaveChannel` already took it down.
  if (state.closed || state.subs.get(sub.channel) !== sub) return;
  acknowledge?.();
  countChanged(ctx, state, sub, written, true);
  ctx.streams.start(catchUp);
  if (sub.presence) await joinPresence(ctx, state, sub, limit).catch(failures(ctx).join);
}

/**
 * Hands a count write of a counted channel (`Dialect.countEvents`) to the announcements; the
 * joiner of an increment gets the count itself if the channel's announcement waits. A dialect
 * without count events costs one property read; a key without them one flag check (`counted`).
 */
function countChanged(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  written: Promise<void>,
  joined: boolean,
): void {
  const frames = state.dialect.countEvents;
  if (frames === undefined || !frames.counted(state.record, sub.channel)) return;
  ctx.countEvents.changed(sub.topic, frames, written, joined ? { state, sub } : undefined);
}

/**
 * Takes a subscription down: the reverse of `enterChannel`, including `member_left` (sent once
 * the presence store answered; failures are logged). While the node drains, its presence and
 * counts were already removed wholesale and are left alone.
 */
export function leaveChannel(ctx: ChannelDeps, state: ConnectionState, sub: Subscription): void {
  if (!state.closed) {
    const { variants } = state.dialect;
    if (!sub.recover) state.conn?.unsubscribe(localTopicOf(variants, sub.topic, sub.primary));
    else {
      state.conn?.unsubscribe(localTopicOf(variants, sub.topic, sub.primary, 'events'));
      state.conn?.unsubscribe(localTopicOf(variants, sub.topic, sub.primary, 'stream'));
    }
  }
  if (sub.recover) ctx.streams.detach(state, sub);
  if (sub.presence) ctx.listGate.forget(state, sub);
  state.subs.delete(sub.channel);
  ctx.registry.leaveTopic(sub.topic, state);
  ctx.meters.subscriptions[sub.topic.protocol]?.dec();
  ctx.subscriptions.release(sub.topic);
  if (ctx.status.draining) return;
  const written = ctx.engine.counts.decrement(
    ctx.nodeId,
    state.key,
    sub.channel,
    countFamilyOf(sub.topic.protocol),
  );
  written.catch(failures(ctx).decrement);
  countChanged(ctx, state, sub, written, false);
  if (!sub.presence) return;
  // A join still in flight is announced first; the leave follows it (`joinPresence`).
  const leave = (): Promise<void> => leavePresence(ctx, state.id, sub);
  (sub.joining ? sub.joining.then(leave, leave) : leave()).catch(failures(ctx).leave);
}
