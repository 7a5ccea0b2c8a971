import type {
  ChannelListing,
  ChannelMembers,
  EntryPlace,
  IdentityPage,
  JoinListing,
  JoinResult,
  LeaveResult,
  PresenceEntry,
  PresenceStore,
} from './presence-store';
import { identityOf } from '../types';
import type { ApiKey, ConnId, Member, NodeId, Protocol, Topic } from '../types';
import { guard, inOrder } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import { TurnBatches } from '../redis/turn-batches';
import type { RedisKeys } from '../redis/keys';
import {
  presenceIdentities,
  presenceRoster,
  presenceTouch,
  presenceWriteScripts,
} from '../redis/presence-scripts';
import type { LuaScript } from '../redis/clients';
import { TOPIC_FAMILIES } from '../config/families';

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

/** Entries of a dead node removed per script call: bounds the time one call holds Redis. */
const REMOVE_PER_CALL = 100;

/** Largest count a script is asked for: "all" without sending Number.MAX_SAFE_INTEGER to Lua. */
const MAX_RANGE = 2 ** 31 - 1;

function toLeave(reply: unknown): LeaveResult {
  const [json, last, count] = reply as [string, number, number];
  return { member: memberOf(json), lastOfIdentity: last === 1, identityCount: count };
}

/** A `by-node` item, `<nodeId>|<protocol>|<channel>|<connId>` (none of them contains `|`). */
function parseNodeItem(key: ApiKey, item: string): { topic: Topic; connId: ConnId } | undefined {
  const [, protocol, channel, connId, extra] = item.split('|');
  if (!protocol || !channel || !connId || extra !== undefined) return undefined;
  return { topic: { key, protocol: protocol as Protocol, channel }, connId };
}

export class RedisPresenceStore implements PresenceStore {
  private readonly scripts: { writes: LuaScript; removeEntries: LuaScript };

  /** `families`: every topic family of the deployment, whose identities presence reads together. */
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly families: readonly Protocol[] = TOPIC_FAMILIES,
  ) {
    this.scripts = presenceWriteScripts(families.length - 1);
  }

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
        if (pending.length <= WRITES_PER_CALL) return this.writeAll(key, pending);
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
    const keys = this.sharedKeys(key);
    const args: (string | number)[] = [];
    // A burst of joins hits few channels: each topic's keys are built once per call, not per write.
    const topicKeys = new Map<Protocol, Map<string, string[]>>();
    for (const write of pending) {
      const { topic } = write;
      let byChannel = topicKeys.get(topic.protocol);
      if (!byChannel) topicKeys.set(topic.protocol, (byChannel = new Map()));
      let ownKeys = byChannel.get(topic.channel);
      if (!ownKeys) {
        ownKeys = this.writeTopicKeys(topic);
        byChannel.set(topic.channel, ownKeys);
      }
      for (const k of ownKeys) keys.push(k);
      if (write.kind === 'leave') {
        args.push('leave', topic.protocol, topic.channel, write.connId, '', '', '', '', '', '', '');
        continue;
      }
      const { entry, now, listing } = write;
      const identity = identityOf(entry.member);
      const stored: StoredEntry = { i: identity, n: entry.nodeId, m: entry.member };
      args.push(
        'join',
        topic.protocol,
        topic.channel,
        entry.connId,
        entry.nodeId,
        identity,
        JSON.stringify(stored),
        -now,
        listing?.of ?? '',
        listing ? Math.max(0, Math.min(listing.limit, MAX_RANGE)) : 0,
        Math.max(0, listing?.maxIdentities ?? 0),
      );
    }
    const replies = (await this.scripts.writes.run(this.client, keys, args)) as unknown[];
    return replies.map((reply, i) => {
      const write = pending[i]!;
      if (write.kind === 'leave') return reply ? toLeave(reply) : null;
      const [first, count, total, entries, refused] = reply as [number, number, number, string[], number];
      if (refused === 1) return { firstOfIdentity: false, identityCount: count, refused: true as const };
      const firstOfIdentity = first === 1;
      if (!write.listing) return { firstOfIdentity, identityCount: count };
      return { firstOfIdentity, identityCount: count, listed: { members: entries.map(memberOf), total } };
    });
  }

  /**
   * The keys every write script takes first: the key's channel index (any family), its node
   * index, its webhook switch and event stream.
   */
  private sharedKeys(key: ApiKey): string[] {
    return [
      this.keys.presenceChannels(key),
      this.keys.presenceByNode(key),
      this.keys.webhookSwitch(key),
      this.keys.webhookEvents(key),
    ];
  }

  /**
   * A topic's keys in a write script: its own, its family's channel index, then for every other
   * family its channel index and the identities of the same channel's topic in it.
   */
  private writeTopicKeys(topic: Topic): string[] {
    const keys = [
      ...this.keys.presenceTopicKeys(topic),
      this.keys.presenceChannels(topic.key, topic.protocol),
    ];
    for (const family of this.families) {
      if (family === topic.protocol) continue;
      const other: Topic = { ...topic, protocol: family };
      keys.push(this.keys.presenceChannels(topic.key, family), this.keys.presenceTopicKeys(other)[2]!);
    }
    return keys;
  }

  async touch(topic: Topic, connId: ConnId, now: number): Promise<void> {
    await guard(this.client, () =>
      presenceTouch.run(this.client, this.keys.presenceTopicKeys(topic), [connId, -now]),
    );
  }

  async roster(topic: Topic, limit: number): Promise<{ members: Member[]; total: number }> {
    const [conns, byConn] = this.keys.presenceTopicKeys(topic);
    const reply = await guard(this.client, () =>
      presenceRoster.run(this.client, [conns!, byConn!], [Math.max(0, Math.min(limit, MAX_RANGE))]),
    );
    const [total, entries] = reply as [number, string[]];
    return { members: entries.map(memberOf), total };
  }

  async identities(topic: Topic, offset: number, limit: number): Promise<IdentityPage> {
    const [conns, , byIdentity, identityConn] = this.keys.presenceTopicKeys(topic);
    const reply = await guard(this.client, () =>
      presenceIdentities.run(
        this.client,
        [conns!, byIdentity!, identityConn!],
        [Math.min(offset, MAX_RANGE), Math.min(limit, MAX_RANGE)],
      ),
    );
    const [count, identities, entries] = reply as [number, string[], string[]];
    return { identities, members: entries.map(memberOf), count };
  }

  /**
   * A page of channel names (one range read), then one bounded read per topic of the page: its
   * roster, or its identity page for a `byIdentity` family.
   */
  async channels(
    key: ApiKey,
    listing: ChannelListing,
  ): Promise<{ channels: ChannelMembers[]; total: number }> {
    const index = this.keys.presenceChannels(key, listing.protocol);
    const offset = Math.min(listing.offset, MAX_RANGE);
    const limit = Math.max(0, Math.min(listing.limit, MAX_RANGE));
    const [names, total] = await guard(this.client, () =>
      Promise.all([
        limit > 0 ? this.client.zrangebylex(index, '-', '+', 'LIMIT', offset, limit) : Promise.resolve([]),
        this.client.zcard(index),
      ]),
    );
    const protocols: readonly Protocol[] = listing.protocol ? [listing.protocol] : this.families;
    const listed = await Promise.all(
      names.flatMap((channel) =>
        protocols.map(async (protocol): Promise<ChannelMembers> => {
          const topic: Topic = { key, protocol, channel };
          if (listing.byIdentity?.has(protocol)) {
            const { members, count } = await this.identities(topic, 0, listing.membersPerChannel);
            return { channel, protocol, members, count };
          }
          const { members, total: count } = await this.roster(topic, listing.membersPerChannel);
          return { channel, protocol, members, count };
        }),
      ),
    );
    return { channels: listed.filter((c) => c.count > 0), total };
  }

  async *nodeEntries(nodeId: NodeId, batchSize = 500): AsyncIterable<EntryPlace[]> {
    let keysCursor = '0';
    do {
      const [nextKeys, apiKeys] = await guard(this.client, () =>
        this.client.sscan(this.keys.presenceNodeKeys(nodeId), keysCursor, 'COUNT', batchSize),
      );
      keysCursor = nextKeys;
      for (const key of apiKeys) {
        const byNode = this.keys.presenceByNode(key);
        // `<nodeId>|<protocol>|<channel>|<connId>`, in lexicographic order: pages follow the last item.
        let from = '[' + nodeId + '|';
        for (;;) {
          const start = from;
          const items = await guard(this.client, () =>
            this.client.zrangebylex(byNode, start, '(' + nodeId + '}', 'LIMIT', 0, batchSize),
          );
          if (items.length === 0) break;
          const places: EntryPlace[] = [];
          for (const item of items) {
            const place = parseNodeItem(key, item);
            if (place) places.push(place);
          }
          if (places.length > 0) yield places;
          if (items.length < batchSize) break;
          from = '(' + items[items.length - 1]!;
        }
      }
    } while (keysCursor !== '0');
  }

  /**
   * Per API key where the node holds entries: reads a chunk of its `by-node` items, removes them
   * with one script call, and repeats until none is left, so no call holds Redis long.
   */
  async removeNode(nodeId: NodeId): Promise<Array<LeaveResult & { topic: Topic }>> {
    const nodeKeys = this.keys.presenceNodeKeys(nodeId);
    const apiKeys = await guard(this.client, () => this.client.smembers(nodeKeys));
    const removed: Array<LeaveResult & { topic: Topic }> = [];
    for (const key of apiKeys) {
      const byNode = this.keys.presenceByNode(key);
      const range = ['[' + nodeId + '|', '(' + nodeId + '}'] as const;
      for (;;) {
        const items = await guard(this.client, () =>
          this.client.zrangebylex(byNode, range[0], range[1], 'LIMIT', 0, REMOVE_PER_CALL),
        );
        if (items.length === 0) break;
        removed.push(...(await this.removeEntries(key, nodeId, items)));
      }
      await guard(this.client, () => this.client.srem(nodeKeys, key));
      // A join of the same node id may have raced in between (a node restarting under its id).
      const raced = await guard(this.client, () =>
        this.client.zrangebylex(byNode, range[0], range[1], 'LIMIT', 0, 1),
      );
      if (raced.length > 0) await guard(this.client, () => this.client.sadd(nodeKeys, key));
    }
    return removed;
  }

  private async removeEntries(
    key: ApiKey,
    nodeId: NodeId,
    items: string[],
  ): Promise<Array<LeaveResult & { topic: Topic }>> {
    const keys = this.sharedKeys(key);
    const args: (string | number)[] = [nodeId];
    const topicNumber = new Map<string, number>();
    const entries: Topic[] = [];
    const malformed: string[] = [];
    for (const item of items) {
      const parsed = parseNodeItem(key, item);
      if (!parsed) {
        malformed.push(item);
        continue;
      }
      const { topic, connId } = parsed;
      const id = `${topic.protocol}|${topic.channel}`;
      let number = topicNumber.get(id);
      if (number === undefined) {
        number = topicNumber.size + 1;
        topicNumber.set(id, number);
        keys.push(...this.writeTopicKeys(topic));
      }
      args.push(number, topic.protocol, topic.channel, connId);
      entries.push(topic);
    }
    // Not written by this version: dropped, or the loop would read them forever.
    if (malformed.length > 0)
      await guard(this.client, () => this.client.zrem(this.keys.presenceByNode(key), ...malformed));
    if (entries.length === 0) return [];
    const reply = await guard(this.client, () => this.scripts.removeEntries.run(this.client, keys, args));
    return (reply as [number, string, number, number][]).map(([j, json, last, count]) => ({
      ...toLeave([json, last, count]),
      topic: entries[j - 1]!,
    }));
  }
}
