import type { ApiKey, ChannelName, NodeId } from '../types';

export interface ChannelCount {
  readonly channel: ChannelName;
  readonly count: number;
}

/**
 * ConnectionCounts: live connections per (key, channel), both protocols together, cluster-wide.
 * A V3 socket counts once for its channel; a V4 socket once for each channel it is subscribed to.
 *
 * Contract, for every implementation:
 * - Counts are owned by the node that changed them, so `removeNode` can take a dead node's share
 *   back out exactly once; a channel whose count reaches 0 disappears from `list`.
 * - `list` orders by count descending, then channel ascending; `total` is the number of channels.
 * - `sum` equals the sum of every channel's count.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface ConnectionCounts {
  increment(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void>;
  decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void>;
  list(key: ApiKey, offset?: number, limit?: number): Promise<{ items: ChannelCount[]; total: number }>;
  sum(key: ApiKey): Promise<number>;
  /** Removes every count `nodeId` contributed, for a dead node or one restarting under its id. */
  removeNode(nodeId: NodeId): Promise<void>;
}
