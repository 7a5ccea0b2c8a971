import { topicId } from '@switchboard/core';
import type { ConnId, Topic } from '@switchboard/core';
import type { Dialect } from '../protocols/dialect';
import type { ConnectionState } from '../connections/connection';
import { TopicNames } from './topics';

/** A topic with sockets on this node: those sockets, the topic's local uWS topic names and its dialect. */
export interface LocalTopic {
  readonly sockets: ReadonlySet<ConnectionState>;
  readonly names: TopicNames;
  readonly dialect: Dialect;
}

interface MutableLocalTopic extends LocalTopic {
  readonly sockets: Set<ConnectionState>;
}

/**
 * This node's open connections, indexed the ways kicks, direct messages and recovery look them up.
 * A key's connections are counted, not listed: a set per key cost every connection a set entry
 * (docs/performance.md, "Idle memory per connection"), and the lookups by key (kicks, a key's
 * revocation) are rare next to connections, so they go over every connection of the node.
 */
export class Registry {
  private readonly connections = new Map<ConnId, ConnectionState>();
  private readonly perKey = new Map<string, number>();
  private readonly byTopic = new Map<string, MutableLocalTopic>();
  /**
   * The last topic `local` found, by value: a node's deliveries come in runs of one topic (a
   * batch to one channel, a channel's publications coming back from the engine as one topic
   * object), and each lookup otherwise builds the topic's id and hashes it again (about 1,700
   * instructions a delivery; docs/performance.md, "Pusher fan-out against the ceiling").
   * Forgotten whenever a topic joins or leaves `byTopic`.
   */
  private lastTopic: Topic | undefined;
  private lastLocal: LocalTopic | undefined;
  /**
   * Connections and subscriptions added or removed so far: a repair that saw it move while it
   * rewrote the node's counts runs again (cluster/repair.ts).
   */
  changes = 0;

  get size(): number {
    return this.connections.size;
  }

  add(state: ConnectionState): void {
    if (this.connections.get(state.id) === state) return;
    this.changes++;
    this.connections.set(state.id, state);
    this.perKey.set(state.key, (this.perKey.get(state.key) ?? 0) + 1);
  }

  remove(state: ConnectionState): void {
    if (this.connections.get(state.id) !== state) return;
    this.changes++;
    this.connections.delete(state.id);
    const left = (this.perKey.get(state.key) ?? 1) - 1;
    if (left > 0) this.perKey.set(state.key, left);
    else this.perKey.delete(state.key);
  }

  joinTopic(topic: Topic, state: ConnectionState): void {
    this.changes++;
    const id = topicId(topic);
    const local = this.byTopic.get(id);
    if (local) local.sockets.add(state);
    else {
      this.lastTopic = undefined;
      this.byTopic.set(id, {
        sockets: new Set([state]),
        names: new TopicNames(topic, state.dialect.variants),
        dialect: state.dialect,
      });
    }
  }

  leaveTopic(topic: Topic, state: ConnectionState): void {
    this.changes++;
    const id = topicId(topic);
    const local = this.byTopic.get(id);
    if (!local) return;
    local.sockets.delete(state);
    if (local.sockets.size === 0) {
      this.byTopic.delete(id);
      this.lastTopic = undefined;
    }
  }

  all(): IterableIterator<ConnectionState> {
    return this.connections.values();
  }

  byId(connId: ConnId): ConnectionState | undefined {
    return this.connections.get(connId);
  }

  /** The key's connections (a new array: the caller may close them while it goes through it). */
  ofKey(key: string): ConnectionState[] {
    const found: ConnectionState[] = [];
    if (!this.perKey.has(key)) return found;
    for (const state of this.connections.values()) if (state.key === key) found.push(state);
    return found;
  }

  inTopic(topic: Topic): ReadonlySet<ConnectionState> {
    return this.byTopic.get(topicId(topic))?.sockets ?? EMPTY;
  }

  /** The topic when it has sockets on this node (every socket a delivery can reach is in it). */
  local(topic: Topic): LocalTopic | undefined {
    const last = this.lastTopic;
    if (
      last !== undefined &&
      (last === topic ||
        (last.channel === topic.channel && last.key === topic.key && last.protocol === topic.protocol))
    )
      return this.lastLocal;
    const local = this.byTopic.get(topicId(topic));
    this.lastTopic = topic;
    this.lastLocal = local;
    return local;
  }

  countOfKey(key: string): number {
    return this.perKey.get(key) ?? 0;
  }
}

const EMPTY: ReadonlySet<ConnectionState> = new Set();
