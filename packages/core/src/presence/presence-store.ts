import type { ApiKey, ConnId, Identity, Member, NodeId, Protocol, Topic } from '../types';

/** One presence-enabled subscription: a connection in a topic, owned by the node that holds it. */
export interface PresenceEntry {
  readonly connId: ConnId;
  readonly nodeId: NodeId;
  readonly member: Member;
}

/**
 * What a join also reads, in the same step, for the joiner: `entries` as `roster(topic, limit)`
 * gives them (one member per connection), `identities` as `identities(topic, 0, limit)` gives
 * their members (one per identity). Which one is the joiner's dialect's choice.
 */
export interface JoinListing {
  readonly of: 'entries' | 'identities';
  readonly limit: number;
  /**
   * Admission (Pusher's members per presence channel): when the entry's identity is not in the
   * topic yet and the topic already holds this many identities, the join is refused and nothing
   * is written, checked in the same atomic step as the write, so concurrent joins on any nodes
   * never pass it together. Absent or 0: no limit.
   */
  readonly maxIdentities?: number;
}

export interface JoinResult {
  /** No other entry of this identity was in the topic (its arrival, for dialects that announce identities). */
  readonly firstOfIdentity: boolean;
  /** Distinct identities in the topic after the join. */
  readonly identityCount: number;
  /** With a `JoinListing`: the members after the join, and the total of entries or identities. */
  readonly listed?: { readonly members: Member[]; readonly total: number };
  /** The join was refused by `maxIdentities` (nothing written; `identityCount` is the topic's). */
  readonly refused?: true;
}

/** Where one presence entry is: a connection in a topic. */
export interface EntryPlace {
  readonly topic: Topic;
  readonly connId: ConnId;
}

export interface LeaveResult {
  readonly member: Member;
  /** No entry of this identity is left in the topic (its departure, for dialects that announce identities). */
  readonly lastOfIdentity: boolean;
  /** Distinct identities in the topic after the leave. */
  readonly identityCount: number;
}

export interface IdentityPage {
  /** Most recently active first; each identity once. */
  readonly identities: Identity[];
  /** The member object of each identity's most recently active entry, same order. */
  readonly members: Member[];
  /** Distinct identities in the topic (the true total, not the page size). */
  readonly count: number;
}

export interface ChannelMembers {
  readonly channel: string;
  readonly protocol: Protocol;
  /**
   * Most recently active first, at most `membersPerChannel`: one member object per entry, or, for
   * a family of the listing's `byIdentity`, per identity (its most recently active entry's, as
   * `identities` lists them).
   */
  readonly members: Member[];
  /** Entries in the topic, or identities for a `byIdentity` family (the true total, not the number listed). */
  readonly count: number;
}

/** Which channels `channels` lists: a page of channel names, with a bounded member list each. */
export interface ChannelListing {
  /** One family's channels, or channels with entries of any (each family's topic listed). */
  readonly protocol?: Protocol;
  /** Channels skipped, in name order (UTF-8 byte order). */
  readonly offset: number;
  /** Channels listed, at most. */
  readonly limit: number;
  /** Members listed per channel and family, at most. */
  readonly membersPerChannel: number;
  /**
   * Families whose topics are listed one member per identity, as `identities(topic, 0,
   * membersPerChannel)` reads them (the same range read: each identity once in any listing);
   * every other family one member per entry, as `roster` reads them. Absent: none.
   */
  readonly byIdentity?: ReadonlySet<Protocol>;
}

/**
 * PresenceStore: who is present in each topic, cluster-wide, readable without asking any gateway.
 *
 * Contract, for every implementation:
 * - An entry is keyed by (topic, connId). `join` of an existing entry refreshes it and is not a
 *   new identity. `leave` of an absent entry returns `null` (idempotent; a crash cleanup and a
 *   late close may both try).
 * - Activity orders everything: `join` and `touch` set an entry's and its identity's last-active
 *   time to `now`; ties break by identity (or connId) ascending so pages are stable.
 * - `identities` and `roster` are consistent snapshots of one topic; `count`/`total` are exact.
 *   `channels` is consistent per topic, not across topics.
 *   A join's `listed` is the snapshot right after that join (one round trip instead of two).
 * - Entries belong to the node in `nodeId`. `removeNode` removes all of a node's entries (when it
 *   died or restarts under the same id) and reports each removal exactly once, across concurrent
 *   callers.
 * - Failures reject with `EngineUnavailableError`; nothing is half-applied.
 */
export interface PresenceStore {
  join(topic: Topic, entry: PresenceEntry, now: number, listing?: JoinListing): Promise<JoinResult>;
  leave(topic: Topic, connId: ConnId): Promise<LeaveResult | null>;
  touch(topic: Topic, connId: ConnId, now: number): Promise<void>;
  /** Entries as member objects (not deduplicated), most recently active first, at most `limit`. */
  roster(topic: Topic, limit: number): Promise<{ members: Member[]; total: number }>;
  /** Identities from `offset`, at most `limit`, most recently active first. */
  identities(topic: Topic, offset: number, limit: number): Promise<IdentityPage>;
  /**
   * A page of the channels of `key` with entries, by name, and the members of each topic: the
   * families in their registered order (`TOPIC_FAMILIES`) within a channel. `total` counts the
   * channels the listing pages over.
   */
  channels(key: ApiKey, listing: ChannelListing): Promise<{ channels: ChannelMembers[]; total: number }>;
  /**
   * Removes every entry of `nodeId`; returns each removal once. Implementations work through a
   * large node in bounded steps, so the engine keeps serving others meanwhile.
   */
  removeNode(nodeId: NodeId): Promise<Array<LeaveResult & { topic: Topic }>>;
  /**
   * Where `nodeId` has entries, read from the node's own index a batch (about `batchSize`) at a
   * time, so no single read holds them all. Every entry present for the whole walk is reported
   * (possibly more than once); one added or removed during the walk may or may not be.
   */
  nodeEntries(nodeId: NodeId, batchSize?: number): AsyncIterable<EntryPlace[]>;
}
