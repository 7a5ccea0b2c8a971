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
  /** What the member carries besides its identity (`Member.info`: Pusher's `user_info`). */
  readonly info: JsonValue | undefined;
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
  /** The primary channel ('' for a socket whose protocol names none in its URL: Pusher's). */
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
  /** When the frame-rate window began, on `socketClock`. */
  rateWindowStart: number;
  rateCount: number;
  conn: Conn | undefined;
  closed: boolean;
  /** A socket of the key's connection limit is reserved in the engine for this connection. */
  socketReserved: boolean;
  /**
   * The user the connection signed in as (a protocol's user authentication, `Command` 'signin').
   * Never set on connections that do not sign in, so they carry no field for it.
   */
  signedIn?: string;
}

const SOCKET_CLOCK_ORIGIN = Date.now();

/**
 * Milliseconds since this process started: the clock of the times every socket keeps
 * (`rateWindowStart`, the keepalive's pings). A small integer is stored in the object's field
 * itself, where a `Date.now()` value took a 16-byte heap number per socket (docs/performance.md,
 * "Idle memory per connection"); after 24 days of uptime the values outgrow small integers and
 * cost those 16 bytes again, nothing else changes.
 */
export function socketClock(): number {
  const ms = Date.now() - SOCKET_CLOCK_ORIGIN;
  // `| 0` makes the difference (a double: `Date.now()` is one) a small integer again; a double
  // stored once turns the field into a boxed number on every socket.
  return ms < SMALL_INTEGER_LIMIT ? ms | 0 : ms;
}

/** V8's small integers on 64-bit builds without pointer compression (Node's): 31 bits and a sign. */
const SMALL_INTEGER_LIMIT = 2 ** 31 - 1;

/** A subscription's presence member (built when needed, not kept per connection). */
export const memberOf = (sub: Subscription): Member => {
  const member: Member = sub.user === undefined ? { uuid: sub.uuid } : { uuid: sub.uuid, user: sub.user };
  if (sub.info !== undefined) member.info = sub.info;
  return member;
};

/**
 * The subscriptions of one socket. Most sockets hold exactly one (every V3 socket, most V4 ones,
 * a Pusher socket after its first `pusher:subscribe`), so the first is a field and a map exists
 * only once a second is added: idle connections cost less memory than with a `Map` each
 * (docs/performance.md, "Idle memory per connection"). The primary, when there is one, is
 * listed first.
 */
export class Subscriptions {
  private others: Map<ChannelName, Subscription> | undefined;

  constructor(private first: Subscription | undefined) {}

  get(channel: ChannelName): Subscription | undefined {
    return this.first?.channel === channel ? this.first : this.others?.get(channel);
  }

  has(channel: ChannelName): boolean {
    return this.get(channel) !== undefined;
  }

  set(sub: Subscription): void {
    if (this.first?.channel === sub.channel) {
      this.first = sub;
      return;
    }
    // A channel is held in one place only: a replaced one in the map leaves it first.
    if (this.others?.has(sub.channel)) this.delete(sub.channel);
    const { first } = this;
    if (first === undefined) {
      this.first = sub;
      return;
    }
    // The primary takes the field (it is listed first); a secondary there moves to the map.
    if (sub.primary && !first.primary) {
      this.first = sub;
      (this.others ??= new Map()).set(first.channel, first);
      return;
    }
    (this.others ??= new Map()).set(sub.channel, sub);
  }

  delete(channel: ChannelName): void {
    if (this.first?.channel === channel) this.first = undefined;
    else if (this.others?.delete(channel) && this.others.size === 0) this.others = undefined;
  }

  values(): Subscription[] {
    const all = this.first ? [this.first] : [];
    if (this.others) all.push(...this.others.values());
    return all;
  }

  get size(): number {
    return (this.first ? 1 : 0) + (this.others?.size ?? 0);
  }
}

/** What a connection's state starts with (`SocketState`): its fields but the subscriptions. */
export type SocketStateInit = Omit<ConnectionState, 'subs' | 'signedIn'>;

/** `SocketState.flags`: its four booleans, as bits of one small integer. */
const NOTIFY_SELF = 1;
const BOOT = 2;
const CLOSED = 4;
const SOCKET_RESERVED = 8;

/**
 * A connection's state, stored as the uWS user data. It *is* its `Subscriptions` (`subs` returns
 * the state itself): one object per socket where a state and a `Subscriptions` took two, 32 bytes
 * less per connection; its booleans are bits of one field (`flags`, read and written through
 * accessors), 24 bytes less than a field each (docs/performance.md, "Idle memory per connection").
 */
export class SocketState extends Subscriptions implements ConnectionState {
  readonly id: ConnId;
  readonly key: string;
  readonly record: ApiKeyRecord;
  readonly dialect: Dialect;
  readonly primary: ChannelName;
  resume: Resume | undefined;
  pending: Set<ChannelName> | undefined;
  rateWindowStart: number;
  rateCount: number;
  conn: Conn | undefined;
  private flags: number;
  /** Added by a sign-in only (`ConnectionState.signedIn`): no field on other connections. */
  declare signedIn?: string;

  constructor(init: SocketStateInit, first: Subscription | undefined) {
    super(first);
    this.id = init.id;
    this.key = init.key;
    this.record = init.record;
    this.dialect = init.dialect;
    this.primary = init.primary;
    this.resume = init.resume;
    this.pending = init.pending;
    this.rateWindowStart = init.rateWindowStart;
    this.rateCount = init.rateCount;
    this.conn = init.conn;
    this.flags =
      (init.notifySelf ? NOTIFY_SELF : 0) |
      (init.boot ? BOOT : 0) |
      (init.closed ? CLOSED : 0) |
      (init.socketReserved ? SOCKET_RESERVED : 0);
  }

  get notifySelf(): boolean {
    return (this.flags & NOTIFY_SELF) !== 0;
  }

  get boot(): boolean {
    return (this.flags & BOOT) !== 0;
  }

  get closed(): boolean {
    return (this.flags & CLOSED) !== 0;
  }

  set closed(value: boolean) {
    this.flags = value ? this.flags | CLOSED : this.flags & ~CLOSED;
  }

  get socketReserved(): boolean {
    return (this.flags & SOCKET_RESERVED) !== 0;
  }

  set socketReserved(value: boolean) {
    this.flags = value ? this.flags | SOCKET_RESERVED : this.flags & ~SOCKET_RESERVED;
  }

  get subs(): Subscriptions {
    return this;
  }
}

/** An upgrade that admission refused: the socket opens only to receive the error and close. */
export interface Rejection {
  readonly dialect: Dialect;
  readonly rejected: CloseReason;
  readonly text: string;
  /** A close code of the dialect's own (`Upgrade.refused`) instead of `rejected`'s. */
  readonly code?: number;
}

export type SocketData = ConnectionState | Rejection;

export const isRejection = (data: SocketData): data is Rejection => 'rejected' in data;
