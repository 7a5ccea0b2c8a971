import type { ChannelCount, ConnectionCounts } from '../counts/connection-counts';
import type { ApiKey, ChannelName, NodeId } from '../types';
import { guard, inOrder } from './clients';
import type { RedisClient } from './clients';
import { countsAdd, countsRemoveNode } from './counts-scripts';
import type { RedisKeys } from './keys';

interface PendingDelta {
  readonly nodeId: NodeId;
  readonly key: ApiKey;
  readonly channel: ChannelName;
  delta: number;
  readonly waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>;
}

/**
 * Counts in Redis. Changes made in one event-loop turn are summed per (node, key, channel) and
 * written as one script call each: a burst of connections to a channel (a reconnect storm, a
 * drain elsewhere) costs one command, not one per socket. Each call still resolves only once
 * its change is written, and a channel's increments and decrements keep their net order.
 */
export class RedisConnectionCounts implements ConnectionCounts {
  private readonly pending = new Map<string, PendingDelta>();
  private scheduled = false;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  increment(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    return this.change(nodeId, key, channel, 1);
  }

  decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    return this.change(nodeId, key, channel, -1);
  }

  private change(nodeId: NodeId, key: ApiKey, channel: ChannelName, delta: 1 | -1): Promise<void> {
    return new Promise((resolve, reject) => {
      const id = `${nodeId}\u001f${key}\u001f${channel}`;
      let entry = this.pending.get(id);
      if (!entry) {
        entry = { nodeId, key, channel, delta: 0, waiters: [] };
        this.pending.set(id, entry);
      }
      entry.delta += delta;
      entry.waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const { nodeId, key, channel, delta, waiters } of entries) {
      const written =
        delta === 0
          ? Promise.resolve()
          : delta > 0
            ? // The node's key index (another slot) is written first, so a crash never hides a share from removeNode.
              inOrder(
                this.client,
                () => this.client.sadd(this.keys.countsNodeKeys(nodeId), key),
                () => countsAdd.run(this.client, this.keyTriple(key, nodeId), [channel, delta]),
              )
            : guard(this.client, () =>
                countsAdd.run(this.client, this.keyTriple(key, nodeId), [channel, delta]),
              );
      written.then(
        () => waiters.forEach((w) => w.resolve()),
        (error: unknown) => waiters.forEach((w) => w.reject(error)),
      );
    }
  }

  async list(
    key: ApiKey,
    offset = 0,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<{ items: ChannelCount[]; total: number }> {
    const channels = this.keys.countsChannels(key);
    const stop = limit >= Number.MAX_SAFE_INTEGER ? -1 : offset + limit - 1;
    if (limit <= 0) return { items: [], total: await guard(this.client, () => this.client.zcard(channels)) };
    const [range, total] = await guard(this.client, () =>
      Promise.all([this.client.zrange(channels, offset, stop, 'WITHSCORES'), this.client.zcard(channels)]),
    );
    const items: ChannelCount[] = [];
    for (let i = 0; i + 1 < range.length; i += 2) {
      items.push({ channel: range[i] as string, count: -Number(range[i + 1]) });
    }
    return { items, total };
  }

  async sum(key: ApiKey): Promise<number> {
    return Number((await guard(this.client, () => this.client.get(this.keys.countsTotal(key)))) ?? 0);
  }

  async removeNode(nodeId: NodeId): Promise<void> {
    const nodeKeys = this.keys.countsNodeKeys(nodeId);
    for (const key of await guard(this.client, () => this.client.smembers(nodeKeys))) {
      await guard(this.client, () => countsRemoveNode.run(this.client, this.keyTriple(key, nodeId), []));
      await guard(this.client, () => this.client.srem(nodeKeys, key));
      // An increment of the same node id may have raced in between (a node restarting under its id).
      if (await guard(this.client, () => this.client.exists(this.keys.countsNode(key, nodeId)))) {
        await guard(this.client, () => this.client.sadd(nodeKeys, key));
      }
    }
  }

  private keyTriple(key: ApiKey, nodeId: NodeId): string[] {
    return [this.keys.countsChannels(key), this.keys.countsTotal(key), this.keys.countsNode(key, nodeId)];
  }
}
