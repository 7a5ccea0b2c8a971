import { countFamilyOf, seedKeys } from '@switchboard/core';
import type { EntryPlace } from '@switchboard/core';
import { publishToChannel } from '../fanout/events';
import { memberOf } from '../connections/connection';
import { activityNow, publishLeave } from '../connections/presence-events';
import type { ConnectionState } from '../connections/connection';
import { isSignedInAt, rejoinUser, retellWatchlist } from '../connections/users';
import { topicId } from '@switchboard/core';
import type { BrokerSubscriptions } from '../fanout/broker-subscriptions';
import type { Registry } from '../fanout/registry';
import type { KeyCache } from '../key-cache';
import type { PresenceDeps } from '../connections/presence-events';

/** What a repair takes: the node's connections and the engine they are rewritten to. */
export interface RepairDeps extends PresenceDeps {
  readonly keys: KeyCache;
  readonly registry: Registry;
  readonly subscriptions: BrokerSubscriptions;
}

const BATCH = 500;

/** How long after a failed write the node's share is rewritten (failures in a burst share one). */
export const REPAIR_DELAY_MS = 2000;

/**
 * Repairs are at least this far apart: failures that come from load (timeouts) must not turn
 * into a rewrite of every connection every few seconds, which is more load.
 */
const REPAIR_INTERVAL_MS = 30_000;

/**
 * Brings the engine back in line with this node's own connections (docs/scaling.md), after Redis was
 * unreachable or after this node was wrongly declared dead:
 * - counts and socket reservations: this node's share is removed and written again from the
 *   open connections;
 * - presence: every entry the engine holds for this node without an open connection behind it is
 *   removed (with its events): the leaves that failed while the engine was away, and joins whose
 *   reply was lost. The node's own index in the engine says where its entries are, read in
 *   batches, so the node keeps nothing per closed connection however long an outage lasts; then
 *   every open presence subscription is joined again (idempotent; announced as its dialect does:
 *   a V4 identity that had been removed gets `member_joined` again), and every signed-in
 *   connection's entry in its user's topic (watchers hear `online` again for a user whose entry
 *   the engine had lost: connections/users.ts);
 * - broker subscriptions: every topic with local subscribers is subscribed again (alongside
 *   the counts and presence, on the subscriber connection);
 * - keys: `SWITCHBOARD_KEYS` is applied again, so a Redis that came back empty (no
 *   persistence) still knows the deployment's keys. Keys created with `switchboard keys` live
 *   only in Redis: keep Redis persistent if you use them (docs/scaling.md). This comes first:
 *   admissions wait for it (`KeyCache.seedsOwed`), and it needs no other step.
 *
 * A restore that fails while the engine answers (a Redis Cluster still forming after its
 * masters restarted: CLUSTERDOWN, MOVED, a subscriber connection not ready yet) is run again
 * after `REPAIR_DELAY_MS`, doubling up to `REPAIR_INTERVAL_MS`, until one succeeds.
 */
export class Repair {
  private running: Promise<void> | undefined;
  private again = false;
  private repairTimer: NodeJS.Timeout | undefined;
  /** When the pending `repairTimer` fires. */
  private repairDue = 0;
  private lastRepairAt = -Infinity;
  /** Restores failed in a row (the next one waits longer); 0 after one succeeds. */
  private failures = 0;
  /**
   * Restores run again in a row because connections came or went while they ran; each waits
   * twice as long as the one before (`REPAIR_DELAY_MS` doubling up to `REPAIR_INTERVAL_MS`), so
   * a long reconnect storm costs a rewrite every 30 s at most; 0 after a restore that saw none,
   * and for a restore asked for by anything else (an outage's end, a `node-dead`).
   */
  private churnRewrites = 0;
  /** The next scheduled restore is such a rewrite. */
  private churnDue = false;

  constructor(private readonly ctx: RepairDeps) {}

  /**
   * A count or presence write of this node failed. When the engine is unreachable, the restore
   * on its return rewrites everything; but a write can fail while the connection stays up (a
   * command timeout under load, an error reply such as OOM), and nothing else would then set
   * the count right. A restore runs `REPAIR_DELAY_MS` after the first such failure (it is
   * idempotent; failures meanwhile share it), `REPAIR_INTERVAL_MS` after the previous repair at
   * the soonest, and again if it fails too.
   */
  repairSoon(): void {
    this.schedule(Math.max(REPAIR_DELAY_MS, this.lastRepairAt + REPAIR_INTERVAL_MS - Date.now()));
  }

  /**
   * A restore in `delay` ms, unless one is due sooner already (a later one is moved up: a
   * failed restore's retry must not wait for a write failure's spaced repair); skipped if the
   * engine is away then.
   */
  private schedule(delay: number): void {
    if (this.ctx.status.draining) return;
    const due = Date.now() + delay;
    if (this.repairTimer) {
      if (this.repairDue <= due) return;
      clearTimeout(this.repairTimer);
    }
    this.repairDue = due;
    this.repairTimer = setTimeout(() => {
      this.repairTimer = undefined;
      if (this.ctx.status.draining || !this.ctx.engine.isAvailable()) return;
      this.lastRepairAt = Date.now();
      void this.restore();
    }, delay);
    this.repairTimer.unref();
  }

  /** The engine was lost: the restore on its return starts over with the shortest retry delay. */
  engineLost(): void {
    this.failures = 0;
    this.churnDue = false;
  }

  /** Stops a pending repair (the gateway is closing). */
  stop(): void {
    clearTimeout(this.repairTimer);
    this.repairTimer = undefined;
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
    // A connection or subscription that comes or goes while the rewrite runs has its own count
    // write queued behind the writes in flight: one made before the share was removed can land
    // after it, on top of the rewrite's own count of that connection (counted twice), or one
    // made after the rewrite read it can be undone by it. The rewrite then runs once more when
    // things have settled, which writes the share from the open connections again.
    const changesAtStart = ctx.registry.changes;
    if (!this.churnDue) this.churnRewrites = 0;
    this.churnDue = false;
    try {
      const mark = ctx.keys.seedMark();
      for (const key of await seedKeys(engine.keys, ctx.config.seedKeys)) {
        ctx.keys.invalidate(key);
        // Nodes with other seeds may have remembered the key as unknown meanwhile.
        await engine.broker.publishControl({ type: 'key-changed', key }).catch(() => undefined);
      }
      ctx.keys.seedsApplied(mark);
      // The broker's subscriber is a connection of its own, which can come back later than the
      // command connection (on a cluster, a second client): counts and presence need not wait
      // for it; the restore fails, and is retried, if it did.
      const resubscribed = ctx.subscriptions.restore().then(
        () => undefined,
        (error: unknown) => error ?? new Error('resubscribing failed'),
      );
      await engine.counts.removeNode(nodeId);
      for await (const places of engine.presence.nodeEntries(nodeId, BATCH)) {
        const stale = places.filter((place) => !this.isOpen(place));
        await Promise.all(
          stale.map(async ({ topic, connId }) => {
            const left = await engine.presence.leave(topic, connId);
            if (left) await publishLeave(ctx, topic, left);
          }),
        );
      }
      let batch: Promise<unknown>[] = [];
      let subscriptions = 0;
      /** Signed-in connections, whose watchlists are retold once subscriptions are back. */
      const signedIn: ConnectionState[] = [];
      for (const state of ctx.registry.all()) {
        // Sockets admitted while the engine was away are reserved now (over the limit, if need be).
        if (ctx.config.limits.maxConnectionsPerKey > 0) {
          state.socketReserved = true;
          batch.push(engine.counts.reserveSocket(nodeId, state.key, 0));
        }
        // A signed-in connection is present in its user's topic (watchlists): written again too.
        if (state.signedIn !== undefined) {
          batch.push(rejoinUser(ctx, state));
          signedIn.push(state);
        }
        for (const sub of state.subs.values()) {
          subscriptions++;
          batch.push(
            engine.counts.increment(nodeId, state.key, sub.channel, countFamilyOf(sub.topic.protocol)),
          );
          if (sub.presence) {
            const entry = { connId: state.id, nodeId, member: memberOf(sub) };
            batch.push(
              engine.presence.join(sub.topic, entry, sub.touchedAt || activityNow()).then((joined) => {
                const event = state.dialect.presence.rejoined(sub, memberOf(sub), joined);
                if (event) void publishToChannel(ctx, sub.topic, event.body, { stampable: event.stampable });
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
      const unsubscribed = await resubscribed;
      if (unsubscribed !== undefined) throw unsubscribed;
      // Subscribed again: watchers learn what they may have missed meanwhile (connections/users.ts).
      await Promise.all(signedIn.map((state) => retellWatchlist(ctx, state)));
      this.failures = 0;
      logger.info({ subscriptions, ms: Date.now() - started }, 'local state rewritten to the engine');
      if (ctx.registry.changes === changesAtStart) this.churnRewrites = 0;
      else {
        this.schedule(Math.min(REPAIR_DELAY_MS * 2 ** this.churnRewrites, REPAIR_INTERVAL_MS));
        this.churnRewrites++;
        this.churnDue = true;
      }
    } catch (error) {
      this.failures++;
      const retryMs = Math.min(REPAIR_DELAY_MS * 2 ** (this.failures - 1), REPAIR_INTERVAL_MS);
      logger.warn({ err: error, retryMs }, 'rewriting local state failed; retried');
      // Unreachable engine: its return restores. Reachable (an error reply): try again soon.
      if (engine.isAvailable()) this.schedule(retryMs);
    }
  }

  /** Whether an open connection of this node is present at `place` (a leave in flight is not). */
  private isOpen({ topic, connId }: EntryPlace): boolean {
    // A connection still being admitted has its entry before its socket (`EarlyJoins`).
    if (this.ctx.earlyJoins.holds(connId, (sub) => topicId(sub.topic) === topicId(topic))) return true;
    const state = this.ctx.registry.byId(connId);
    if (!state || state.closed) return false;
    if (isSignedInAt(state, topic)) return true;
    const sub = state.subs.get(topic.channel);
    return sub !== undefined && sub.presence && topicId(sub.topic) === topicId(topic);
  }
}
