import type {
  ChannelMembers,
  EntryPlace,
  IdentityPage,
  JoinListing,
  JoinResult,
  LeaveResult,
  PresenceEntry,
  PresenceStore,
} from '../presence/presence-store';
import { identityOf } from '../types';
import type { ApiKey, ConnId, Member, NodeId, Protocol, Topic } from '../types';
import { guard, inOrder } from './clients';
import type { RedisClient } from './clients';
import { topicInKey } from './keys';
import { TurnBatches } from './turn-batches';
import type { RedisKeys } from './keys';
import {
  presenceChannels,
  presenceIdentities,
  presenceRemoveNode,
  presenceRoster,
  presenceTouch,
  presenceWrites,
} from './presence-scripts';

/** An entry as stored in `<topic>:conns`: identity and node for the scripts, member for readers. */
interface StoredEntry {
  i: string;
  n: NodeId;
  m: Member;
}

const memberOf = (json: string): Member => (JSON.parse(json) as StoredEntry).m;

type PendingWrite =
  | { kind: 'join'; topic: Topic; entry: PresenceEntry; now: number; listing: JoinListing | undefined }
  | { kind: 'leave'; topic: Topic; connId: ConnId };

/** Writes per script call: bounds the time one call holds Redis (a join may list up to its limit). */
const WRITES_PER_CALL = 100;

/** Largest count a script is asked for: "all" without sending Number.MAX_SAFE_INTEGER to Lua. */
const MAX_RANGE = 2 ** 31 - 1;

function parseTopic(key: ApiKey, topic: string): Topic {
  const sep = topic.indexOf('|');
  return { key, protocol: topic.slice(0, sep) as Protocol, channel: topic.slice(sep + 1) };
}

function toLeave(reply: unknown): LeaveResult {
  const [json, last, count] = reply as [string, number, number];
  return { member: memberOf(json), lastOfIdentity: last === 1, identityCount: count };
}

const byChannelThenProtocol = (a: ChannelMembers, b: ChannelMembers): number =>
  a.channel < b.channel
    ? -1
    : a.channel > b.channel
      ? 1
      : a.protocol < b.protocol
        ? -1
        : a.protocol > b.protocol
          ? 1
          : 0;

export class RedisPresenceStore implements PresenceStore {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  join(topic: Topic, entry: PresenceEntry, now: number, listing?: JoinListing): Promise<JoinResult> {
    return this.writes.request(topic.key, {
      kind: 'join',
      topic,
      entry,
      now,
      listing,
    }) as Promise<JoinResult>;
  }

  leave(topic: Topic, connId: ConnId): Promise<LeaveResult | null> {
    return this.writes.request(topic.key, { kind: 'leave', topic, connId }) as Promise<LeaveResult | null>;
  }

  /**
   * The joins and leaves of one event-loop turn, per API key (one slot on a cluster), run in
   * order as one script call per `WRITES_PER_CALL` (a reconnect storm, a busy node: one command,
   * not one per socket). The key index of each node that joins (another slot) is written
   * first, so a crash never hides an entry from removeNode.
   */
  private readonly writes = new TurnBatches<ApiKey, PendingWrite, JoinResult | LeaveResult | null>(
    (key) => key,
    (key, pending) => {
      const run = async (): Promise<Array<JoinResult | LeaveResult | null>> => {
        const calls: Promise<Array<JoinResult | LeaveResult | null>>[] = [];
        for (let i = 0; i < pending.length; i += WRITES_PER_CALL) {
          calls.push(this.writeAll(key, pending.slice(i, i + WRITES_PER_CALL)));
        }
        return (await Promise.all(calls)).flat();
      };
      const joining = new Set<NodeId>();
      for (const write of pending) if (write.kind === 'join') joining.add(write.entry.nodeId);
      if (joining.size === 0) return guard(this.client, run);
      const index = (): Promise<unknown> =>
        Promise.all([...joining].map((nodeId) => this.client.sadd(this.keys.presenceNodeKeys(nodeId), key)));
      return inOrder(this.client, index, run);
    },
  );

  private async writeAll(
    key: ApiKey,
    pending: PendingWrite[],
  ): Promise<Array<JoinResult | LeaveResult | null>> {
    const keys = [this.keys.presenceChannels(key)];
    const args: (string | number)[] = [this.keys.presenceNodePrefix(key)];
    for (const write of pending) {
      keys.push(this.keys.presenceTopic(write.topic));
      if (write.kind === 'leave') {
        args.push('leave', topicInKey(write.topic), write.connId, '', '', '', '', '', '');
        continue;
      }
      const { topic, entry, now, listing } = write;
      const identity = identityOf(entry.member);
      const stored: StoredEntry = { i: identity, n: entry.nodeId, m: entry.member };
      args.push(
        'join',
        topicInKey(topic),
        entry.connId,
        entry.nodeId,
        identity,
        JSON.stringify(stored),
        -now,
        listing?.of ?? '',
        listing ? Math.max(0, Math.min(listing.limit, MAX_RANGE)) : 0,
      );
    }
    const replies = (await presenceWrites.run(this.client, keys, args)) as unknown[];
    return replies.map((reply, i) => {
      const write = pending[i]!;
      if (write.kind === 'leave') return reply ? toLeave(reply) : null;
      const [first, count, total, entries] = reply as [number, number, number, string[]];
      const joined = { firstOfIdentity: first === 1, identityCount: count };
      return write.listing ? { ...joined, listed: { members: entries.map(memberOf), total } } : joined;
    });
  }

  async touch(topic: Topic, connId: ConnId, now: number): Promise<void> {
    await guard(this.client, () =>
      presenceTouch.run(this.client, [this.keys.presenceTopic(topic)], [connId, -now]),
    );
  }

  async roster(topic: Topic, limit: number): Promise<{ members: Member[]; total: number }> {
    const reply = await guard(this.client, () =>
      presenceRoster.run(this.client, [this.keys.presenceTopic(topic)], [Math.min(limit, MAX_RANGE)]),
    );
    const [total, entries] = reply as [number, string[]];
    return { members: entries.map(memberOf), total };
  }

  async identities(topic: Topic, offset: number, limit: number): Promise<IdentityPage> {
    const reply = await guard(this.client, () =>
      presenceIdentities.run(
        this.client,
        [this.keys.presenceTopic(topic)],
        [Math.min(offset, MAX_RANGE), Math.min(limit, MAX_RANGE)],
      ),
    );
    const [count, identities, entries] = reply as [number, string[], string[]];
    return { identities, members: entries.map(memberOf), count };
  }

  async channels(key: ApiKey, protocol?: Protocol): Promise<ChannelMembers[]> {
    const reply = await guard(this.client, () =>
      presenceChannels.run(
        this.client,
        [this.keys.presenceChannels(key)],
        [this.keys.presenceTopicPrefix(key), protocol ?? ''],
      ),
    );
    return (reply as [string, string[]][])
      .map(([topic, entries]) => {
        const { protocol: p, channel } = parseTopic(key, topic);
        return { channel, protocol: p, members: entries.map(memberOf) };
      })
      .sort(byChannelThenProtocol);
  }

  async *nodeEntries(nodeId: NodeId, batchSize = 500): AsyncIterable<EntryPlace[]> {
    const scan = (set: string, cursor: string) =>
      guard(this.client, () => this.client.sscan(set, cursor, 'COUNT', batchSize));
    let keysCursor = '0';
    do {
      const [nextKeys, apiKeys] = await scan(this.keys.presenceNodeKeys(nodeId), keysCursor);
      keysCursor = nextKeys;
      for (const key of apiKeys) {
        let cursor = '0';
        do {
          const [next, places] = await scan(this.keys.presenceNodeEntries(key, nodeId), cursor);
          cursor = next;
          // Each is `<protocol>|<channel>|<connId>`; none of the three contains '|'.
          if (places.length > 0)
            yield places.map((place) => {
              const end = place.lastIndexOf('|');
              return { topic: parseTopic(key, place.slice(0, end)), connId: place.slice(end + 1) };
            });
        } while (cursor !== '0');
      }
    } while (keysCursor !== '0');
  }

  async removeNode(nodeId: NodeId): Promise<Array<LeaveResult & { topic: Topic }>> {
    const nodeKeys = this.keys.presenceNodeKeys(nodeId);
    const apiKeys = await guard(this.client, () => this.client.smembers(nodeKeys));
    const removed: Array<LeaveResult & { topic: Topic }> = [];
    for (const key of apiKeys) {
      const reply = await guard(this.client, () =>
        presenceRemoveNode.run(
          this.client,
          [this.keys.presenceNodeEntries(key, nodeId), this.keys.presenceChannels(key)],
          [this.keys.presenceTopicPrefix(key), this.keys.presenceNodePrefix(key)],
        ),
      );
      for (const [topic, json, last, count] of reply as [string, string, number, number][]) {
        removed.push({ ...toLeave([json, last, count]), topic: parseTopic(key, topic) });
      }
      await guard(this.client, () => this.client.srem(nodeKeys, key));
      // A join of the same node id may have raced in between (a node restarting under its id).
      if (await guard(this.client, () => this.client.exists(this.keys.presenceNodeEntries(key, nodeId)))) {
        await guard(this.client, () => this.client.sadd(nodeKeys, key));
      }
    }
    return removed;
  }
}
