import type { ApiKey, ChannelName, NodeId } from '../types';
import type { ChannelCount, ConnectionCounts } from './connection-counts';

const byCountThenName = (a: ChannelCount, b: ChannelCount): number =>
  b.count - a.count || (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0);

export class MemoryConnectionCounts implements ConnectionCounts {
  /** key → channel → node → count */
  private readonly counts = new Map<ApiKey, Map<ChannelName, Map<NodeId, number>>>();

  async increment(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    this.add(nodeId, key, channel, 1);
  }

  async decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void> {
    this.add(nodeId, key, channel, -1);
  }

  async list(
    key: ApiKey,
    offset = 0,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<{ items: ChannelCount[]; total: number }> {
    const all = this.channelCounts(key).sort(byCountThenName);
    return { items: all.slice(offset, offset + limit), total: all.length };
  }

  async sum(key: ApiKey): Promise<number> {
    return this.channelCounts(key).reduce((total, c) => total + c.count, 0);
  }

  async removeNode(nodeId: NodeId): Promise<void> {
    for (const [key, channels] of this.counts) {
      for (const [channel, nodes] of channels) {
        nodes.delete(nodeId);
        if (nodes.size === 0) channels.delete(channel);
      }
      if (channels.size === 0) this.counts.delete(key);
    }
  }

  private add(nodeId: NodeId, key: ApiKey, channel: ChannelName, delta: number): void {
    const channels = this.counts.get(key) ?? new Map<ChannelName, Map<NodeId, number>>();
    const nodes = channels.get(channel) ?? new Map<NodeId, number>();
    const next = (nodes.get(nodeId) ?? 0) + delta;
    if (next > 0) nodes.set(nodeId, next);
    else nodes.delete(nodeId);
    if (nodes.size > 0) channels.set(channel, nodes);
    else channels.delete(channel);
    if (channels.size > 0) this.counts.set(key, channels);
    else this.counts.delete(key);
  }

  private channelCounts(key: ApiKey): ChannelCount[] {
    const channels = this.counts.get(key);
    if (!channels) return [];
    return [...channels].map(([channel, nodes]) => ({
      channel,
      count: [...nodes.values()].reduce((a, b) => a + b, 0),
    }));
  }
}
