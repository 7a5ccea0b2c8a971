import type { ApiKey, ChannelName, NodeId } from '../types';

export interface ChannelCount {
  readonly channel: ChannelName;
  readonly count: number;
}

/**
 * ConnectionCounts: live connections per (key, channel), both protocols together, cluster-wide.
 * A V3 socket counts once for its channel; a V4 socket once for each channel it is subscribed to.
 * Apart from those, the sockets of each key (a V4 socket with many channels is one) are counted
 * by reservation, for the per-key connection limit.
 *
 * Contract, for every implementation:
 * - Counts are owned by the node that changed them, so `removeNode` can take a dead node's share
 *   back out exactly once; a channel whose count reaches 0 disappears from `list`.
 * - `list` orders by count descending, then channel ascending; `total` is the number of channels.
 * - `sum` equals the sum of every channel's count.
 * - `reserveSocket` is atomic cluster-wide: of any number of concurrent calls for one key, on any
 *   nodes, exactly as many succeed as fit under `limit`. Reservations are owned per node like
 *   counts: `releaseSocket` gives back one of `nodeId`'s (never below zero) and `removeNode`
 *   takes all of a node's back.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface ConnectionCounts {
  increment(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void>;
  decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName): Promise<void>;
  list(key: ApiKey, offset?: number, limit?: number): Promise<{ items: ChannelCount[]; total: number }>;
  sum(key: ApiKey): Promise<number>;
  /** Reserves one socket of `key` for `nodeId` unless `limit` (0: none) are reserved already; true when reserved. */
  reserveSocket(nodeId: NodeId, key: ApiKey, limit: number): Promise<boolean>;
  releaseSocket(nodeId: NodeId, key: ApiKey): Promise<void>;
  /** Sockets reserved for `key`, on every node. */
  sockets(key: ApiKey): Promise<number>;
  /**
   * Removes every count and socket reservation `nodeId` contributed, for a dead node or one
   * restarting under its id.
   */
  removeNode(nodeId: NodeId): Promise<void>;
}
