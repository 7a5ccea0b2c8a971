import type { ConnId, Topic } from '@switchboard/core';
import type { ConnectionState } from './connection';
import { topicKey } from './topics';

/** This node's open connections, indexed the ways kicks, direct messages and recovery look them up. */
export class Registry {
  private readonly connections = new Map<ConnId, ConnectionState>();
  private readonly byKey = new Map<string, Set<ConnectionState>>();
  private readonly byTopic = new Map<string, Set<ConnectionState>>();

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
    addTo(this.byTopic, topicKey(topic), state);
  }

  leaveTopic(topic: Topic, state: ConnectionState): void {
    removeFrom(this.byTopic, topicKey(topic), state);
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
    return this.byTopic.get(topicKey(topic)) ?? EMPTY;
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
