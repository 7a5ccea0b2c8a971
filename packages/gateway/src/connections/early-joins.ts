import type { ConnId, JoinResult } from '@switchboard/core';
import type { ConnectionState, Subscription } from './connection';

/**
 * Presence joins of new connections, issued during admission (docs/architecture.md, "Presence
 * joins start at admission"). The join's round trip to the engine overlaps the rest of the
 * socket's opening, and the joins of every upgrade handled in one event-loop turn go to the
 * engine together. The upgrade never waits for the join: the socket's `open` takes it over and
 * sends the member list once it is answered.
 *
 * An entry lives from the moment the join is issued until the socket opens (`take`) or its
 * upgrade is abandoned (`abandon`): while it does, the connection counts as present for the
 * node's recovery (`holds`), which otherwise removes every entry without an open socket behind it.
 */
export class EarlyJoins {
  private readonly joins = new Map<ConnId, EarlyJoin>();

  /**
   * Records a join in flight for `state`'s primary subscription. A failure goes to `failed` and
   * settles the join as `undefined`: the socket joins again when it opens.
   */
  start(
    state: ConnectionState,
    sub: Subscription,
    now: number,
    joined: Promise<JoinResult>,
    failed: (error: unknown) => void,
  ): void {
    const settled = joined.then(
      (result): JoinResult | undefined => result,
      (error: unknown) => {
        failed(error);
        return undefined;
      },
    );
    this.joins.set(state.id, { sub, now, settled });
  }

  /** Connections between their early join and their socket's open (or abandon). */
  get size(): number {
    return this.joins.size;
  }

  /** Whether `connId` has an early join, on a subscription `matches` accepts, that its socket has not taken yet. */
  holds(connId: ConnId, matches: (sub: Subscription) => boolean): boolean {
    const early = this.joins.get(connId);
    return early !== undefined && matches(early.sub);
  }

  /**
   * The early join of `sub` (its connection's primary subscription), removed: it settles with the
   * engine's answer, or `undefined` when the engine did not answer (the caller joins again).
   * `undefined` when there was none.
   */
  take(state: ConnectionState, sub: Subscription): EarlyJoin | undefined {
    const early = this.joins.get(state.id);
    if (!early || early.sub !== sub) return undefined;
    this.joins.delete(state.id);
    return early;
  }

  /** Removes the entry of a connection that never opened. */
  abandon(state: ConnectionState): EarlyJoin | undefined {
    const early = this.joins.get(state.id);
    if (early) this.joins.delete(state.id);
    return early;
  }
}

export interface EarlyJoin {
  readonly sub: Subscription;
  /** The activity time the join was written with. */
  readonly now: number;
  readonly settled: Promise<JoinResult | undefined>;
}
