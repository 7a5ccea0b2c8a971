import type { ApiKey, ChannelName, NodeId } from '../types';
import type { ChannelCount, ConnectionCounts } from './connection-counts';
import type { WebhookSink } from '../webhooks/webhooks-memory';
import { COUNT_FAMILIES } from '../config/families';
import type { CountFamily } from '../config/families';

const byCountThenName = (a: ChannelCount, b: ChannelCount): number =>
  b.count - a.count || (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0);

export class MemoryConnectionCounts implements ConnectionCounts {
  /** family → key → channel → node → count */
  private readonly families = new Map<CountFamily, Map<ApiKey, Map<ChannelName, Map<NodeId, number>>>>(
    COUNT_FAMILIES.map((family) => [family, new Map()]),
  );
  /** key → node → sockets reserved */
  private readonly reserved = new Map<ApiKey, Map<NodeId, number>>();

  /** `webhooks` hears each channel's 0 → 1 and 1 → 0 transitions, cluster-wide. */
  constructor(private readonly webhooks?: WebhookSink) {}

  async increment(
    nodeId: NodeId,
    key: ApiKey,
    channel: ChannelName,
    family: CountFamily = 'piesocket',
  ): Promise<void> {
    this.add(family, nodeId, key, channel, 1);
  }

  async decrement(
    nodeId: NodeId,
    key: ApiKey,
    channel: ChannelName,
    family: CountFamily = 'piesocket',
  ): Promise<void> {
    this.add(family, nodeId, key, channel, -1);
  }

  async list(
    key: ApiKey,
    offset = 0,
    limit = Number.MAX_SAFE_INTEGER,
    family: CountFamily = 'piesocket',
  ): Promise<{ items: ChannelCount[]; total: number }> {
    const all = this.channelCounts(family, key).sort(byCountThenName);
    return { items: all.slice(offset, offset + limit), total: all.length };
  }

  async sum(key: ApiKey, family: CountFamily = 'piesocket'): Promise<number> {
    return this.channelCounts(family, key).reduce((total, c) => total + c.count, 0);
  }

  async count(key: ApiKey, channel: ChannelName, family: CountFamily = 'piesocket'): Promise<number> {
    const nodes = this.families.get(family)?.get(key)?.get(channel);
    return nodes ? [...nodes.values()].reduce((a, b) => a + b, 0) : 0;
  }

  async reserveSocket(nodeId: NodeId, key: ApiKey, limit: number): Promise<boolean> {
    if (limit > 0 && this.socketsOf(key) >= limit) return false;
    const nodes = this.reserved.get(key) ?? new Map<NodeId, number>();
    nodes.set(nodeId, (nodes.get(nodeId) ?? 0) + 1);
    this.reserved.set(key, nodes);
    return true;
  }

  async releaseSocket(nodeId: NodeId, key: ApiKey): Promise<void> {
    const nodes = this.reserved.get(key);
    const held = nodes?.get(nodeId) ?? 0;
    if (!nodes || held <= 0) return;
    if (held > 1) nodes.set(nodeId, held - 1);
    else nodes.delete(nodeId);
    if (nodes.size === 0) this.reserved.delete(key);
  }

  async sockets(key: ApiKey): Promise<number> {
    return this.socketsOf(key);
  }

  private socketsOf(key: ApiKey): number {
    return [...(this.reserved.get(key)?.values() ?? [])].reduce((a, b) => a + b, 0);
  }

  async removeNode(nodeId: NodeId): Promise<void> {
    for (const [key, nodes] of this.reserved) {
      nodes.delete(nodeId);
      if (nodes.size === 0) this.reserved.delete(key);
    }
    for (const [family, counts] of this.families) {
      for (const [key, channels] of counts) {
        for (const [channel, nodes] of channels) {
          nodes.delete(nodeId);
          if (nodes.size > 0) continue;
          channels.delete(channel);
          if (!this.occupiedElsewhere(family, key, channel)) {
            this.webhooks?.emit(key, { name: 'channel_vacated', channel });
          }
        }
        if (channels.size === 0) counts.delete(key);
      }
    }
  }

  /** Whether another count family has connections in `channel` (webhooks are per channel name). */
  private occupiedElsewhere(family: CountFamily, key: ApiKey, channel: ChannelName): boolean {
    for (const [other, counts] of this.families) {
      if (other !== family && counts.get(key)?.has(channel)) return true;
    }
    return false;
  }

  private add(family: CountFamily, nodeId: NodeId, key: ApiKey, channel: ChannelName, delta: number): void {
    const counts = this.families.get(family);
    if (!counts) return;
    const channels = counts.get(key) ?? new Map<ChannelName, Map<NodeId, number>>();
    const nodes = channels.get(channel) ?? new Map<NodeId, number>();
    const held = nodes.get(nodeId) ?? 0;
    // As in Redis: a decrement below the node's own share is ignored.
    if (held + delta < 0) return;
    const occupied = nodes.size > 0;
    const next = held + delta;
    if (next > 0) nodes.set(nodeId, next);
    else nodes.delete(nodeId);
    const transition = occupied !== nodes.size > 0 && !this.occupiedElsewhere(family, key, channel);
    if (transition)
      this.webhooks?.emit(key, { name: occupied ? 'channel_vacated' : 'channel_occupied', channel });
    if (nodes.size > 0) channels.set(channel, nodes);
    else channels.delete(channel);
    if (channels.size > 0) counts.set(key, channels);
    else counts.delete(key);
  }

  private channelCounts(family: CountFamily, key: ApiKey): ChannelCount[] {
    const channels = this.families.get(family)?.get(key);
    if (!channels) return [];
    return [...channels].map(([channel, nodes]) => ({
      channel,
      count: [...nodes.values()].reduce((a, b) => a + b, 0),
    }));
  }
}
