import type {
  ApiKeyRecord,
  ChannelName,
  CloseReason,
  ConnId,
  JsonValue,
  Member,
  Topic,
} from '@switchboard/core';
import type { Resume } from '../streams/resume';
import type { Dialect } from '../protocols/dialect';
import type { Conn } from '../transport/types';

/** One channel a connection is in: the primary (its URL) or, on V4, a secondary. */
export interface Subscription {
  readonly channel: ChannelName;
  readonly topic: Topic;
  readonly primary: boolean;
  readonly uuid: string;
  readonly user: JsonValue | undefined;
  /** `user` in the string form kicks and direct messages match against. */
  readonly userIdentity: string | undefined;
  readonly presence: boolean;
  /** Opted in to offsets and recovery (docs/protocol.md, "History and recovery"). */
  readonly recover: boolean;
  /** Last time activity was written to the presence store (writes are debounced). */
  touchedAt: number;
  /** The presence join in flight, which a leave waits for (`joinPresence`). */
  joining: Promise<unknown> | undefined;
}

/** Per-socket state, stored as the uWS user data (no wrapper objects per connection). */
export interface ConnectionState {
  readonly id: ConnId;
  readonly key: string;
  readonly record: ApiKeyRecord;
  /** The wire protocol it speaks. */
  readonly dialect: Dialect;
  readonly primary: ChannelName;
  readonly notifySelf: boolean;
  /** The dialect greets it right after `open` (`Dialect.greets`). */
  readonly boot: boolean;
  /** Where the primary subscription resumes (`since`/`epoch` in the URL); cleared once used. */
  resume: Resume | undefined;
  /** The channels the socket is in: its primary and (V4) secondaries. */
  readonly subs: Subscriptions;
  /** Channels with a subscribe in flight (V4), so a duplicate cannot race it; created on first use. */
  pending: Set<ChannelName> | undefined;
  rateWindowStart: number;
  rateCount: number;
  conn: Conn | undefined;
  closed: boolean;
  /** A socket of the key's connection limit is reserved in the engine for this connection. */
  socketReserved: boolean;
}

/** A subscription's presence member (built when needed, not kept per connection). */
export const memberOf = (sub: Subscription): Member =>
  sub.user === undefined ? { uuid: sub.uuid } : { uuid: sub.uuid, user: sub.user };

/**
 * The subscriptions of one socket. Most sockets hold exactly one (every V3 socket, most V4
 * ones), so the primary is a field and a map exists only once a V4 socket adds secondaries:
 * idle connections cost less memory than with a `Map` each.
 */
export class Subscriptions {
  private secondaries: Map<ChannelName, Subscription> | undefined;

  constructor(private primarySub: Subscription | undefined) {}

  get(channel: ChannelName): Subscription | undefined {
    return this.primarySub?.channel === channel ? this.primarySub : this.secondaries?.get(channel);
  }

  has(channel: ChannelName): boolean {
    return this.get(channel) !== undefined;
  }

  set(sub: Subscription): void {
    if (sub.primary) this.primarySub = sub;
    else (this.secondaries ??= new Map()).set(sub.channel, sub);
  }

  delete(channel: ChannelName): void {
    if (this.primarySub?.channel === channel) this.primarySub = undefined;
    else if (this.secondaries?.delete(channel) && this.secondaries.size === 0) this.secondaries = undefined;
  }

  values(): Subscription[] {
    const all = this.primarySub ? [this.primarySub] : [];
    if (this.secondaries) all.push(...this.secondaries.values());
    return all;
  }

  get size(): number {
    return (this.primarySub ? 1 : 0) + (this.secondaries?.size ?? 0);
  }
}

/** An upgrade that admission refused: the socket opens only to receive the error and close. */
export interface Rejection {
  readonly dialect: Dialect;
  readonly rejected: CloseReason;
  readonly text: string;
}

export type SocketData = ConnectionState | Rejection;

export const isRejection = (data: SocketData): data is Rejection => 'rejected' in data;
