import type { ConnId, JoinResult } from '@switchboard/core';
import type { ConnectionState, Subscription } from './connection';

/**
 * Presence joins of new connections, made during admission, before the upgrade completes
 * (docs/architecture.md, "Presence joins before the upgrade"). The socket then opens with its
 * join already answered: its member list goes out in the same write as the `101` response
 * instead of a send of its own once the engine answers, the larger part of a join's cost on the
 * gateway.
 *
 * An entry lives from the moment the join is issued until the socket opens (`take`) or its
 * upgrade is abandoned (`abandon`): while it does, the connection counts as present for the
 * node's recovery (`holds`), which otherwise removes every entry without an open socket behind it.
 */
export class EarlyJoins {
  private readonly joins = new Map<ConnId, EarlyJoin>();

  /**
   * Records a join in flight for `state`'s primary subscription. Resolves once `joined` settled,
   * never rejects: a failure goes to `failed` and the socket joins again when it opens.
   */
  start(
    state: ConnectionState,
    sub: Subscription,
    now: number,
    joined: Promise<JoinResult>,
    failed: (error: unknown) => void,
  ): Promise<void> {
    const early: EarlyJoin = { sub, now, result: undefined };
    this.joins.set(state.id, early);
    return joined.then((result) => {
      early.result = result;
    }, failed);
  }

  /** Connections between their early join and their socket's open (or abandon). */
  get size(): number {
    return this.joins.size;
  }

  /** Whether `connId` has an early join on `sub`'s topic that its socket has not taken yet. */
  holds(connId: ConnId, topicKey: (sub: Subscription) => boolean): boolean {
    const early = this.joins.get(connId);
    return early !== undefined && topicKey(early.sub);
  }

  /**
   * The early join of `sub` (its connection's primary subscription), removed: the answer, or
   * `failed` when the engine did not answer (the caller joins again). `undefined` when there was
   * none.
   */
  take(state: ConnectionState, sub: Subscription): EarlyJoinOutcome | undefined {
    const early = this.joins.get(state.id);
    if (!early || early.sub !== sub) return undefined;
    this.joins.delete(state.id);
    return early.result ? { joined: early.result, now: early.now } : { failed: true };
  }

  /** Removes the entry of a connection that never opened; its answer, when there was one. */
  abandon(state: ConnectionState): { sub: Subscription; joined: JoinResult; now: number } | undefined {
    const early = this.joins.get(state.id);
    if (!early) return undefined;
    this.joins.delete(state.id);
    return early.result ? { sub: early.sub, joined: early.result, now: early.now } : undefined;
  }
}

interface EarlyJoin {
  readonly sub: Subscription;
  readonly now: number;
  result: JoinResult | undefined;
}

export type EarlyJoinOutcome = { joined: JoinResult; now: number } | { failed: true };
