import type { ChannelCount, ConnectionCounts } from './connection-counts';
import type { ApiKey, ChannelName, NodeId } from '../types';
import { guard, inOrder } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import { countsAdd, countsRemoveNode, socketsRelease, socketsReserve } from '../redis/counts-scripts';
import type { RedisKeys } from '../redis/keys';
import { TurnBatches } from '../redis/turn-batches';
import { COUNT_FAMILIES } from '../config/families';
import type { CountFamily } from '../config/families';

/** Arguments (channel, delta pairs) per script call: a call spreads them into a JS argument list. */
const MAX_ARGS = 2000;

/** Channels of a dead node's share subtracted per script call (bounds the time one call holds Redis). */
const REMOVE_PER_CALL = 500;

/** The counts one node holds for one API key in one count family: changed together, by one script call. */
interface CountShare {
  readonly nodeId: NodeId;
  readonly key: ApiKey;
  readonly family: CountFamily;
}

interface CountChange {
  readonly channel: ChannelName;
  readonly delta: 1 | -1;
}

const shareId = ({ nodeId, key, family }: CountShare): string => `${nodeId}\u001f${key}\u001f${family}`;

/** A share's write in flight and the changes waiting for it to be answered. */
interface ShareWrites {
  readonly answered: Promise<void>;
  waiting: { readonly changes: CountChange[]; readonly written: Promise<unknown>; start(): void } | undefined;
}

/**
 * Counts in Redis. Changes made in one event-loop turn are summed per channel and written as
 * one script call per (node, key): a burst of connections (a reconnect storm, a drain elsewhere)
 * costs one command per key, not one per socket. Each call still resolves only once its change
 * is written, and a channel's increments and decrements keep their net order.
 *
 * A share has one write in flight at a time; changes made meanwhile wait for its answer and then
 * go out together. The script ignores a decrement below the node's share (counts never go
 * negative), so a decrement that overtook its increment would be lost and the closed socket
 * counted for good. Two writes could travel apart: on a cluster a growing batch waits for its
 * index write (another slot) while a later one goes straight out, and a script missing from
 * Redis' cache is sent again behind the calls that overtook it (`LuaScript`).
 */
export class RedisConnectionCounts implements ConnectionCounts {
  private readonly shares = new Map<string, ShareWrites>();

  private readonly changes = new TurnBatches<CountShare, CountChange>(shareId, (share, changes) => {
    const id = shareId(share);
    const current = this.shares.get(id);
    if (!current) return this.send(id, share, changes);
    if (current.waiting) {
      current.waiting.changes.push(...changes);
      return current.waiting.written;
    }
    const waiting = {
      changes: [...changes],
      written: undefined as unknown as Promise<unknown>,
      start: () => {},
    };
    waiting.written = new Promise<unknown>((resolve, reject) => {
      waiting.start = () => void this.send(id, share, waiting.changes).then(resolve, reject);
    });
    current.waiting = waiting;
    return waiting.written;
  });

  /** Writes `changes` now as the share's write in flight; what waits for it goes out once it is answered. */
  private send(id: string, share: CountShare, changes: CountChange[]): Promise<unknown> {
    const written = this.writeChanges(share, changes);
    const entry: ShareWrites = {
      answered: written.then(
        () => undefined,
        () => undefined,
      ),
      waiting: undefined,
    };
    this.shares.set(id, entry);
    void entry.answered.then(() => {
      if (entry.waiting) entry.waiting.start();
      else if (this.shares.get(id) === entry) this.shares.delete(id);
    });
    return written;
  }

  /** Writes one batch of a share's changes: their net per channel, in one script call. */
  private writeChanges({ nodeId, key, family }: CountShare, changes: CountChange[]): Promise<unknown> {
    const net = new Map<ChannelName, number>();
    for (const { channel, delta } of changes) net.set(channel, (net.get(channel) ?? 0) + delta);
    const args: Array<string | number> = [];
    let grows = false;
    for (const [channel, delta] of net) {
      if (delta === 0) continue;
      args.push(channel, delta);
      grows ||= delta > 0;
    }
    if (args.length === 0) return Promise.resolve();
    const add = async () => {
      for (let i = 0; i < args.length; i += MAX_ARGS) {
        await countsAdd.run(
          this.client,
          [...this.keyTriple(key, nodeId, family), ...this.hookKeys(key), ...this.otherChannels(key, family)],
          args.slice(i, i + MAX_ARGS),
        );
      }
    };
    if (!grows) return guard(this.client, add);
    // The node's key index (another slot) is written first, so a crash never hides a share from removeNode.
    return inOrder(this.client, () => this.client.sadd(this.keys.countsNodeKeys(nodeId), key), add);
  }

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  increment(
    nodeId: NodeId,
    key: ApiKey,
    channel: ChannelName,
    family: CountFamily = 'piesocket',
  ): Promise<void> {
    return this.changes.add({ nodeId, key, family }, { channel, delta: 1 });
  }

  decrement(
    nodeId: NodeId,
    key: ApiKey,
    channel: ChannelName,
    family: CountFamily = 'piesocket',
  ): Promise<void> {
    return this.changes.add({ nodeId, key, family }, { channel, delta: -1 });
  }

  async list(
    key: ApiKey,
    offset = 0,
    limit = Number.MAX_SAFE_INTEGER,
    family: CountFamily = 'piesocket',
  ): Promise<{ items: ChannelCount[]; total: number }> {
    const channels = this.keys.countsChannels(key, family);
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

  async sum(key: ApiKey, family: CountFamily = 'piesocket'): Promise<number> {
    return Number((await guard(this.client, () => this.client.get(this.keys.countsTotal(key, family)))) ?? 0);
  }

  /** One ZSCORE of the key's channel index (scores are negated counts, so `list` reads them in order). */
  async count(key: ApiKey, channel: ChannelName, family: CountFamily = 'piesocket'): Promise<number> {
    const score = await guard(this.client, () =>
      this.client.zscore(this.keys.countsChannels(key, family), channel),
    );
    const count = score === null ? 0 : -Number(score);
    return count > 0 ? count : 0;
  }

  async reserveSocket(nodeId: NodeId, key: ApiKey, limit: number): Promise<boolean> {
    // The node's key index (another slot) is written first, so a crash never hides a reservation from removeNode.
    const reserved = await inOrder(
      this.client,
      () => this.client.sadd(this.keys.countsNodeKeys(nodeId), key),
      () => socketsReserve.run(this.client, this.socketKeys(key), [nodeId, limit]),
    );
    return reserved === 1;
  }

  async releaseSocket(nodeId: NodeId, key: ApiKey): Promise<void> {
    await guard(this.client, () => socketsRelease.run(this.client, this.socketKeys(key), [nodeId]));
  }

  async sockets(key: ApiKey): Promise<number> {
    return Number((await guard(this.client, () => this.client.get(this.keys.countsSocketsTotal(key)))) ?? 0);
  }

  async removeNode(nodeId: NodeId): Promise<void> {
    const nodeKeys = this.keys.countsNodeKeys(nodeId);
    for (const key of await guard(this.client, () => this.client.smembers(nodeKeys))) {
      for (const family of COUNT_FAMILIES) {
        const keys = [
          ...this.keyTriple(key, nodeId, family),
          ...this.socketKeys(key),
          ...this.hookKeys(key),
          ...this.otherChannels(key, family),
        ];
        // Each call takes out about REMOVE_PER_CALL channels; other clients' commands run in between.
        let cursor = '0';
        do {
          const step = cursor;
          cursor = String(
            await guard(this.client, () =>
              countsRemoveNode.run(this.client, keys, [nodeId, step, REMOVE_PER_CALL]),
            ),
          );
        } while (cursor !== '0');
      }
      await guard(this.client, () => this.client.srem(nodeKeys, key));
      // An increment or reservation of the same node id may have raced in between (a node restarting under its id).
      const [shares, sockets] = await guard(this.client, () =>
        Promise.all([
          this.client.exists(...COUNT_FAMILIES.map((family) => this.keys.countsNode(key, nodeId, family))),
          this.client.hexists(this.keys.countsSockets(key), nodeId),
        ]),
      );
      if (shares || sockets) await guard(this.client, () => this.client.sadd(nodeKeys, key));
    }
  }

  private hookKeys(key: ApiKey): string[] {
    return [this.keys.webhookSwitch(key), this.keys.webhookEvents(key)];
  }

  private socketKeys(key: ApiKey): string[] {
    return [this.keys.countsSockets(key), this.keys.countsSocketsTotal(key)];
  }

  private keyTriple(key: ApiKey, nodeId: NodeId, family: CountFamily): string[] {
    return [
      this.keys.countsChannels(key, family),
      this.keys.countsTotal(key, family),
      this.keys.countsNode(key, nodeId, family),
    ];
  }

  /** The channel ZSETs of the key's other count families: webhook transitions are per channel name. */
  private otherChannels(key: ApiKey, family: CountFamily): string[] {
    return COUNT_FAMILIES.filter((other) => other !== family).map((other) =>
      this.keys.countsChannels(key, other),
    );
  }
}
