import type {
  ChannelMembers,
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
import type { RedisKeys } from './keys';
import {
  presenceChannels,
  presenceIdentities,
  presenceJoin,
  presenceLeave,
  presenceRemoveNode,
  presenceRoster,
  presenceTouch,
} from './presence-scripts';

/** An entry as stored in `<topic>:conns`: identity and node for the scripts, member for readers. */
interface StoredEntry {
  i: string;
  n: NodeId;
  m: Member;
}

const memberOf = (json: string): Member => (JSON.parse(json) as StoredEntry).m;

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

  async join(topic: Topic, entry: PresenceEntry, now: number, listing?: JoinListing): Promise<JoinResult> {
    const identity = identityOf(entry.member);
    const stored: StoredEntry = { i: identity, n: entry.nodeId, m: entry.member };
    // The node's key index (another slot) is written first, so a crash never hides an entry from removeNode.
    const reply = await inOrder(
      this.client,
      () => this.client.sadd(this.keys.presenceNodeKeys(entry.nodeId), topic.key),
      () =>
        presenceJoin.run(
          this.client,
          [this.keys.presenceTopic(topic), this.keys.presenceChannels(topic.key)],
          [
            this.keys.presenceNodePrefix(topic.key),
            topicInKey(topic),
            entry.connId,
            entry.nodeId,
            identity,
            JSON.stringify(stored),
            -now,
            listing?.of ?? '',
            listing ? Math.max(0, Math.min(listing.limit, MAX_RANGE)) : 0,
          ],
        ),
    );
    const [first, count, total, entries] = reply as [number, number, number, string[]];
    const joined = { firstOfIdentity: first === 1, identityCount: count };
    return listing ? { ...joined, listed: { members: entries.map(memberOf), total } } : joined;
  }

  async leave(topic: Topic, connId: ConnId): Promise<LeaveResult | null> {
    const reply = await guard(this.client, () =>
      presenceLeave.run(
        this.client,
        [this.keys.presenceTopic(topic), this.keys.presenceChannels(topic.key)],
        [this.keys.presenceNodePrefix(topic.key), topicInKey(topic), connId],
      ),
    );
    return reply ? toLeave(reply) : null;
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
