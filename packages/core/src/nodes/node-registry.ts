import type { NodeId } from '../types';

/**
 * NodeRegistry: which gateway nodes are alive, so a survivor can clean up after one that died
 * without warning (SIGKILL, lost host).
 *
 * Contract, for every implementation:
 * - `heartbeat` marks a node alive at `now`; `leave` removes it (clean shutdown).
 * - `expired` lists nodes whose last heartbeat is older than `now - timeoutMs`.
 * - `claim` removes an expired node from the registry and returns true to exactly one caller, so
 *   the cleanup of a dead node (presence, counts, `member_left` events) happens once.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface NodeRegistry {
  heartbeat(nodeId: NodeId, now: number): Promise<void>;
  leave(nodeId: NodeId): Promise<void>;
  expired(now: number, timeoutMs: number): Promise<NodeId[]>;
  claim(nodeId: NodeId): Promise<boolean>;
}
