import type { NodeId } from '../types';
import type { NodeRegistry } from './node-registry';

export class MemoryNodeRegistry implements NodeRegistry {
  private readonly lastSeen = new Map<NodeId, number>();

  async heartbeat(nodeId: NodeId, now: number): Promise<void> {
    this.lastSeen.set(nodeId, now);
  }

  async leave(nodeId: NodeId): Promise<void> {
    this.lastSeen.delete(nodeId);
  }

  async expired(now: number, timeoutMs: number): Promise<NodeId[]> {
    return [...this.lastSeen].filter(([, seen]) => seen < now - timeoutMs).map(([id]) => id);
  }

  async claim(nodeId: NodeId): Promise<boolean> {
    return this.lastSeen.delete(nodeId);
  }
}
