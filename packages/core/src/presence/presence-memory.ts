import { TOPIC_FAMILIES } from '../config/families';
import { identityOf, topicId } from '../types';
import type { ApiKey, ConnId, Identity, Member, NodeId, Protocol, Topic } from '../types';
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
import type { WebhookSink } from '../webhooks/webhooks-memory';

interface Stored {
  entry: PresenceEntry;
  identity: Identity;
  activeAt: number;
}

interface TopicState {
  topic: Topic;
  entries: Map<ConnId, Stored>;
  /** identity → its entries' connIds, so joins and leaves stay O(1) on large channels */
  byIdentity: Map<Identity, Set<ConnId>>;
}

/** UTF-8 byte order, as Redis compares strings. */
const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

const byActivity = (a: { activeAt: number; id: string }, b: { activeAt: number; id: string }): number =>
  b.activeAt - a.activeAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class MemoryPresenceStore implements PresenceStore {
  private readonly topics = new Map<string, TopicState>();

  /**
   * `webhooks` hears each identity's first and last connection in a channel, the channel's
   * identities across `families` counted together.
   */
  constructor(
    private readonly webhooks?: WebhookSink,
    private readonly families: readonly Protocol[] = TOPIC_FAMILIES,
  ) {}

  /** Whether `identity` has an entry in the same channel's topic of another family. */
  private inOtherFamily(topic: Topic, identity: Identity): boolean {
    for (const family of this.families) {
      if (family === topic.protocol) continue;
      const other = this.topics.get(topicId({ ...topic, protocol: family }));
      if (other?.byIdentity.has(identity)) return true;
    }
    return false;
  }

  async join(topic: Topic, entry: PresenceEntry, now: number, listing?: JoinListing): Promise<JoinResult> {
    const id = topicId(topic);
    let state = this.topics.get(id);
    if (!state) {
      state = { topic, entries: new Map(), byIdentity: new Map() };
      this.topics.set(id, state);
    }
    const identity = identityOf(entry.member);
    const existing = state.entries.get(entry.connId);
    const max = listing?.maxIdentities ?? 0;
    if (max > 0 && !state.byIdentity.has(identity) && state.byIdentity.size >= max) {
      if (state.entries.size === 0) this.topics.delete(id);
      return { firstOfIdentity: false, identityCount: state.byIdentity.size, refused: true };
    }
    if (existing) this.unindex(state, existing);
    if (existing && existing.identity !== identity && this.webhooks) {
      // The connection now presents another identity: the old one may have left, the new one arrived.
      const { channel } = topic;
      if (!state.byIdentity.has(existing.identity) && !this.inOtherFamily(topic, existing.identity)) {
        this.webhooks.emit(topic.key, { name: 'member_removed', channel, user_id: existing.identity });
      }
      if (!state.byIdentity.has(identity) && !this.inOtherFamily(topic, identity)) {
        this.webhooks.emit(topic.key, { name: 'member_added', channel, user_id: identity });
      }
    }
    const firstOfIdentity = !existing && !state.byIdentity.has(identity);
    state.entries.set(entry.connId, { entry, identity, activeAt: now });
    const conns = state.byIdentity.get(identity) ?? new Set<ConnId>();
    conns.add(entry.connId);
    state.byIdentity.set(identity, conns);
    if (firstOfIdentity && this.webhooks && !this.inOtherFamily(topic, identity)) {
      this.webhooks.emit(topic.key, { name: 'member_added', channel: topic.channel, user_id: identity });
    }
    const joined = { firstOfIdentity, identityCount: state.byIdentity.size };
    if (!listing) return joined;
    if (listing.of === 'entries') {
      const { members, total } = await this.roster(topic, listing.limit);
      return { ...joined, listed: { members, total } };
    }
    const { members, count } = await this.identities(topic, 0, listing.limit);
    return { ...joined, listed: { members, total: count } };
  }

  async leave(topic: Topic, connId: ConnId): Promise<LeaveResult | null> {
    const id = topicId(topic);
    const state = this.topics.get(id);
    const stored = state?.entries.get(connId);
    if (!state || !stored) return null;
    state.entries.delete(connId);
    this.unindex(state, stored);
    if (state.entries.size === 0) this.topics.delete(id);
    const lastOfIdentity = !state.byIdentity.has(stored.identity);
    if (lastOfIdentity && this.webhooks && !this.inOtherFamily(topic, stored.identity)) {
      this.webhooks.emit(topic.key, {
        name: 'member_removed',
        channel: topic.channel,
        user_id: stored.identity,
      });
    }
    return {
      member: stored.entry.member,
      lastOfIdentity,
      identityCount: state.byIdentity.size,
    };
  }

  async touch(topic: Topic, connId: ConnId, now: number): Promise<void> {
    const stored = this.topics.get(topicId(topic))?.entries.get(connId);
    if (stored) stored.activeAt = now;
  }

  async roster(topic: Topic, limit: number): Promise<{ members: Member[]; total: number }> {
    const state = this.topics.get(topicId(topic));
    if (!state) return { members: [], total: 0 };
    const sorted = [...state.entries.values()]
      .map((s) => ({ activeAt: s.activeAt, id: s.entry.connId, member: s.entry.member }))
      .sort(byActivity);
    return { members: sorted.slice(0, limit).map((s) => s.member), total: sorted.length };
  }

  async identities(topic: Topic, offset: number, limit: number): Promise<IdentityPage> {
    const state = this.topics.get(topicId(topic));
    if (!state) return { identities: [], members: [], count: 0 };
    const sorted = [...this.identityActivity(state).values()].sort(byActivity);
    const page = sorted.slice(offset, offset + limit);
    return { identities: page.map((p) => p.id), members: page.map((p) => p.member), count: sorted.length };
  }

  async channels(
    key: ApiKey,
    listing: ChannelListing,
  ): Promise<{ channels: ChannelMembers[]; total: number }> {
    const byChannel = new Map<string, TopicState[]>();
    for (const state of this.topics.values()) {
      const { topic } = state;
      if (topic.key !== key || (listing.protocol && topic.protocol !== listing.protocol)) continue;
      byChannel.set(topic.channel, [...(byChannel.get(topic.channel) ?? []), state]);
    }
    const names = [...byChannel.keys()].sort(byBytes);
    const channels: ChannelMembers[] = [];
    for (const channel of names.slice(listing.offset, listing.offset + listing.limit)) {
      // Families in their registered order, as the Redis store lists them.
      const order = (state: TopicState): number => this.families.indexOf(state.topic.protocol);
      const states = (byChannel.get(channel) ?? []).sort((a, b) => order(a) - order(b));
      for (const { topic } of states) {
        channels.push({ channel, protocol: topic.protocol, ...(await this.listed(topic, listing)) });
      }
    }
    return { channels, total: names.length };
  }

  async removeNode(nodeId: NodeId): Promise<Array<LeaveResult & { topic: Topic }>> {
    const removed: Array<LeaveResult & { topic: Topic }> = [];
    for (const state of [...this.topics.values()]) {
      for (const stored of [...state.entries.values()]) {
        if (stored.entry.nodeId !== nodeId) continue;
        const left = await this.leave(state.topic, stored.entry.connId);
        if (left) removed.push({ ...left, topic: state.topic });
      }
    }
    return removed;
  }

  async *nodeEntries(nodeId: NodeId, batchSize = 500): AsyncIterable<EntryPlace[]> {
    let batch: EntryPlace[] = [];
    for (const state of [...this.topics.values()]) {
      for (const stored of state.entries.values()) {
        if (stored.entry.nodeId !== nodeId) continue;
        batch.push({ topic: state.topic, connId: stored.entry.connId });
        if (batch.length < batchSize) continue;
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  /** One topic of a channel listing: its entries, or its identities for a `byIdentity` family. */
  private async listed(topic: Topic, listing: ChannelListing): Promise<{ members: Member[]; count: number }> {
    if (listing.byIdentity?.has(topic.protocol)) {
      const { members, count } = await this.identities(topic, 0, listing.membersPerChannel);
      return { members, count };
    }
    const { members, total } = await this.roster(topic, listing.membersPerChannel);
    return { members, count: total };
  }

  private unindex(state: TopicState, stored: Stored): void {
    const conns = state.byIdentity.get(stored.identity);
    conns?.delete(stored.entry.connId);
    if (conns?.size === 0) state.byIdentity.delete(stored.identity);
  }

  /** Per identity: its latest activity and the member object of that entry. */
  private identityActivity(
    state: TopicState,
  ): Map<Identity, { id: Identity; activeAt: number; member: Member }> {
    const map = new Map<Identity, { id: Identity; activeAt: number; member: Member }>();
    for (const stored of state.entries.values()) {
      const current = map.get(stored.identity);
      if (!current || stored.activeAt >= current.activeAt) {
        map.set(stored.identity, {
          id: stored.identity,
          activeAt: stored.activeAt,
          member: stored.entry.member,
        });
      }
    }
    return map;
  }
}
