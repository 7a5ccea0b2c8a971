import { seedKeys } from '@switchboard/core';
import type { ConnId, Topic } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { publishToChannel } from '../ws/events';
import { v4Event } from '../ws/frames';
import { memberOf } from '../ws/connection';
import { activityNow, publishLeave } from '../ws/presence-events';
import { topicKey } from '../ws/topics';

const BATCH = 500;

/**
 * Brings the engine back in line with this node's own connections (SPEC §8), after Redis was
 * unreachable or after this node was wrongly declared dead:
 * - counts and socket reservations: this node's share is removed and written again from the
 *   open connections;
 * - presence: leaves that failed while the engine was away are retried (with their events), and
 *   every open presence subscription is joined again (idempotent; a V4 identity that had been
 *   removed is announced with `member_joined` again);
 * - broker subscriptions: every topic with local subscribers is subscribed again;
 * - keys: `SWITCHBOARD_KEYS` is applied again, so a Redis that came back empty (no
 *   persistence) still knows the deployment's keys. Keys created with `switchboard keys` live
 *   only in Redis: keep Redis persistent if you use them (docs/scaling.md).
 */
export class Recovery {
  private readonly failedLeaves = new Map<string, { topic: Topic; connId: ConnId }>();
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly ctx: GatewayContext) {}

  noteFailedLeave(topic: Topic, connId: ConnId): void {
    this.failedLeaves.set(`${topicKey(topic)}|${connId}`, { topic, connId });
  }

  /** Runs a restore; a request while one runs schedules exactly one more after it. */
  restore(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        void this.restore();
      }
    });
    return this.running;
  }

  private async run(): Promise<void> {
    const { ctx } = this;
    const { engine, nodeId, logger } = ctx;
    const started = Date.now();
    try {
      await ctx.subscriptions.restore();
      for (const key of await seedKeys(engine.keys, ctx.config.seedKeys)) ctx.keys.invalidate(key);
      await engine.counts.removeNode(nodeId);
      for (const [id, { topic, connId }] of [...this.failedLeaves]) {
        const left = await engine.presence.leave(topic, connId);
        this.failedLeaves.delete(id);
        if (left) await publishLeave(ctx, topic, left);
      }
      let batch: Promise<unknown>[] = [];
      let subscriptions = 0;
      for (const state of ctx.registry.all()) {
        // Sockets admitted while the engine was away are reserved now (over the limit, if need be).
        if (ctx.config.limits.maxConnectionsPerKey > 0) {
          state.socketReserved = true;
          batch.push(engine.counts.reserveSocket(nodeId, state.key, 0));
        }
        for (const sub of state.subs.values()) {
          subscriptions++;
          batch.push(engine.counts.increment(nodeId, state.key, sub.channel));
          if (sub.presence) {
            const entry = { connId: state.id, nodeId, member: memberOf(sub) };
            batch.push(
              engine.presence.join(sub.topic, entry, sub.touchedAt || activityNow()).then((joined) => {
                if (sub.topic.protocol === 'v4' && joined.firstOfIdentity) {
                  const event = v4Event('system::member_joined', {
                    channel: sub.channel,
                    member: memberOf(sub),
                    count: joined.identityCount,
                  });
                  void publishToChannel(ctx, sub.topic, event, { stampable: true });
                }
              }),
            );
          }
          if (batch.length >= BATCH) {
            await Promise.all(batch);
            batch = [];
          }
        }
      }
      await Promise.all(batch);
      logger.info({ subscriptions, ms: Date.now() - started }, 'local state rewritten to the engine');
    } catch (error) {
      logger.warn({ err: error }, 'rewriting local state failed; retried when the engine is back');
    }
  }
}
