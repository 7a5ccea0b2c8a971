import type { NodeId } from '@switchboard/core';
import { publishLeave } from '../connections/presence-events';
import type { PresenceDeps } from '../connections/presence-events';

/**
 * Cluster membership (docs/scaling.md). Every node heartbeats into the node registry; every node also
 * watches for nodes whose heartbeat stopped and — exactly one of them, by `claim` — removes a dead
 * node's presence and counts and sends `member_left` for its members (once per identity that is
 * not connected elsewhere), then announces `node-dead` so a node wrongly declared dead (a long
 * pause, a partition) rewrites its own entries.
 *
 * Timing: a node is declared dead when its last heartbeat is older than
 * `NODE_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS`; the check runs every heartbeat interval, so a node
 * that crashes is cleaned up within `NODE_TIMEOUT_MS` of its crash.
 */
export class Membership {
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;

  constructor(private readonly ctx: PresenceDeps) {}

  /** Clears what a previous incarnation under the same `NODE_ID` left, then starts heartbeating. */
  async start(): Promise<void> {
    await this.cleanupNode(this.ctx.nodeId).catch((error: unknown) =>
      this.ctx.logger.warn({ err: error }, 'could not clear a previous incarnation of this node'),
    );
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.ctx.config.cluster.heartbeatIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Leaves the registry (clean shutdown). */
  async leave(): Promise<void> {
    this.stop();
    await this.ctx.engine.nodes.leave(this.ctx.nodeId).catch(() => undefined);
  }

  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    const { engine, nodeId, config, logger } = this.ctx;
    try {
      const now = Date.now();
      await engine.nodes.heartbeat(nodeId, now);
      const deadAfter = config.cluster.nodeTimeoutMs - config.cluster.heartbeatIntervalMs;
      for (const dead of await engine.nodes.expired(now, deadAfter)) {
        if (dead === nodeId || !(await engine.nodes.claim(dead))) continue;
        logger.warn({ deadNode: dead }, 'node declared dead; removing its presence and counts');
        await this.cleanupNode(dead);
        await engine.broker.publishControl({ type: 'node-dead', nodeId: dead }).catch(() => undefined);
      }
    } catch (error) {
      logger.debug({ err: error }, 'membership tick failed (engine unreachable?)');
    } finally {
      this.ticking = false;
    }
  }

  /** Removes a node's presence (with `member_left` events) and counts. */
  async cleanupNode(node: NodeId): Promise<number> {
    const removed = await this.ctx.engine.presence.removeNode(node);
    await this.ctx.engine.counts.removeNode(node);
    if (removed.length > 0)
      this.ctx.logger.info({ node, removed: removed.length }, 'presence of a node removed');
    for (const left of removed) await publishLeave(this.ctx, left.topic, left).catch(() => undefined);
    return removed.length;
  }
}
