import type { NodeRegistry } from './node-registry';
import type { NodeId } from '../types';
import { guard } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';

/** One ZSET nodeId → last heartbeat; ZREM decides a claim, so exactly one caller wins. */
export class RedisNodeRegistry implements NodeRegistry {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async heartbeat(nodeId: NodeId, now: number): Promise<void> {
    await guard(this.client, () => this.client.zadd(this.keys.nodes(), now, nodeId));
  }

  async leave(nodeId: NodeId): Promise<void> {
    await guard(this.client, () => this.client.zrem(this.keys.nodes(), nodeId));
  }

  async expired(now: number, timeoutMs: number): Promise<NodeId[]> {
    return guard(this.client, () =>
      this.client.zrangebyscore(this.keys.nodes(), '-inf', `(${now - timeoutMs}`),
    );
  }

  async claim(nodeId: NodeId): Promise<boolean> {
    return (await guard(this.client, () => this.client.zrem(this.keys.nodes(), nodeId))) === 1;
  }
}
