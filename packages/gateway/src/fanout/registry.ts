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

/** This node's open connections, indexed the ways kicks, direct messages and recovery look them up. */
export class Registry {
  private readonly connections = new Map<ConnId, ConnectionState>();
  private readonly byKey = new Map<string, Set<ConnectionState>>();
  private readonly byTopic = new Map<string, MutableLocalTopic>();

  get size(): number {
    return this.connections.size;
  }

  add(state: ConnectionState): void {
    this.connections.set(state.id, state);
    addTo(this.byKey, state.key, state);
  }

  remove(state: ConnectionState): void {
    if (this.connections.get(state.id) === state) this.connections.delete(state.id);
    removeFrom(this.byKey, state.key, state);
  }

  joinTopic(topic: Topic, state: ConnectionState): void {
    const id = topicId(topic);
    const local = this.byTopic.get(id);
    if (local) local.sockets.add(state);
    else
      this.byTopic.set(id, {
        sockets: new Set([state]),
        names: new TopicNames(topic, state.dialect.variants),
        dialect: state.dialect,
      });
  }

  leaveTopic(topic: Topic, state: ConnectionState): void {
    const id = topicId(topic);
    const local = this.byTopic.get(id);
    if (!local) return;
    local.sockets.delete(state);
    if (local.sockets.size === 0) this.byTopic.delete(id);
  }

  all(): IterableIterator<ConnectionState> {
    return this.connections.values();
  }

  byId(connId: ConnId): ConnectionState | undefined {
    return this.connections.get(connId);
  }

  ofKey(key: string): ReadonlySet<ConnectionState> {
    return this.byKey.get(key) ?? EMPTY;
  }

  inTopic(topic: Topic): ReadonlySet<ConnectionState> {
    return this.byTopic.get(topicId(topic))?.sockets ?? EMPTY;
  }

  /** The topic when it has sockets on this node (every socket a delivery can reach is in it). */
  local(topic: Topic): LocalTopic | undefined {
    return this.byTopic.get(topicId(topic));
  }

  countOfKey(key: string): number {
    return this.byKey.get(key)?.size ?? 0;
  }
}

const EMPTY: ReadonlySet<ConnectionState> = new Set();

function addTo<K>(map: Map<K, Set<ConnectionState>>, k: K, state: ConnectionState): void {
  const set = map.get(k);
  if (set) set.add(state);
  else map.set(k, new Set([state]));
}

function removeFrom<K>(map: Map<K, Set<ConnectionState>>, k: K, state: ConnectionState): void {
  const set = map.get(k);
  if (!set) return;
  set.delete(state);
  if (set.size === 0) map.delete(k);
}
