import type { ChannelCount, ConnectionCounts } from '../counts/connection-counts';
import type { ApiKey, ChannelName, NodeId } from '../types';
import { guard, inOrder } from './clients';
import type { RedisClient } from './clients';
import { countsAdd, countsRemoveNode } from './counts-scripts';
import type { RedisKeys } from './keys';

export class RedisConnectionCounts implements ConnectionCounts {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async increment(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    // The node's key index (another slot) is written first, so a crash never hides a share from removeNode.
    await inOrder(
      this.client,
      () => this.client.sadd(this.keys.countsNodeKeys(nodeId), key),
      () => countsAdd.run(this.client, this.keyTriple(key, nodeId), [channel, 1]),
    );
  }

  async decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    await this.add(nodeId, key, channel, -1);
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

  private async add(nodeId: NodeId, key: ApiKey, channel: ChannelName, delta: 1 | -1): Promise<void> {
    await guard(this.client, () => countsAdd.run(this.client, this.keyTriple(key, nodeId), [channel, delta]));
  }

  private keyTriple(key: ApiKey, nodeId: NodeId): string[] {
    return [this.keys.countsChannels(key), this.keys.countsTotal(key), this.keys.countsNode(key, nodeId)];
  }
}
