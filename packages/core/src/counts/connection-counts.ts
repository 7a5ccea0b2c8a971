import type { ApiKey, ChannelName, NodeId } from '../types';
import type { CountFamily } from '../config/families';

export interface ChannelCount {
  readonly channel: ChannelName;
  readonly count: number;
}

/**
 * ConnectionCounts: live connections per (key, count family, channel), cluster-wide. The PieSocket
 * family counts V3 and V4 together; Pusher connections are counted apart (`countFamilyOf`), so a
 * channel name used by both is two rows, one per family. A V3 socket counts once for its channel;
 * a V4 or Pusher socket once for each channel it is subscribed to. Every `family` argument
 * defaults to `'piesocket'`.
 * Apart from those, the sockets of each key (a V4 socket with many channels is one) are counted
 * by reservation, for the per-key connection limit.
 *
 * Contract, for every implementation:
 * - Counts are owned by the node that changed them, so `removeNode` can take a dead node's share
 *   back out exactly once; a channel whose count reaches 0 disappears from `list`.
 * - `list` orders by count descending, then channel ascending; `total` is the number of channels.
 * - `sum` equals the sum of every channel's count (of the family).
 * - `channel_occupied` / `channel_vacated` (to the webhook sink) are per channel name across the
 *   families: occupied when the name's first connection of any family arrives, vacated when its
 *   last one of every family left.
 * - `reserveSocket` is atomic cluster-wide: of any number of concurrent calls for one key, on any
 *   nodes, exactly as many succeed as fit under `limit`. Reservations are owned per node like
 *   counts: `releaseSocket` gives back one of `nodeId`'s (never below zero) and `removeNode`
 *   takes all of a node's back.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface ConnectionCounts {
  increment(nodeId: NodeId, key: ApiKey, channel: ChannelName, family?: CountFamily): Promise<void>;
  decrement(nodeId: NodeId, key: ApiKey, channel: ChannelName, family?: CountFamily): Promise<void>;
  list(
    key: ApiKey,
    offset?: number,
    limit?: number,
    family?: CountFamily,
  ): Promise<{ items: ChannelCount[]; total: number }>;
  sum(key: ApiKey, family?: CountFamily): Promise<number>;
  /** One channel's count (of the family) on every node; 0 for a channel no one is in. */
  count(key: ApiKey, channel: ChannelName, family?: CountFamily): Promise<number>;
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
