import type {
  ApiKeyRecord,
  ChannelName,
  CloseReason,
  ConnId,
  JsonValue,
  Member,
  Protocol,
  Topic,
} from '@switchboard/core';
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
  readonly member: Member;
  readonly presence: boolean;
  /** Last time activity was written to the presence store (writes are debounced). */
  touchedAt: number;
}

/** Per-socket state, stored as the uWS user data (no wrapper objects per connection). */
export interface ConnectionState {
  readonly id: ConnId;
  readonly key: string;
  readonly record: ApiKeyRecord;
  readonly protocol: Protocol;
  readonly primary: ChannelName;
  readonly notifySelf: boolean;
  /** `be=1` on /v3/: the Dart SDK waits for a boot frame. */
  readonly boot: boolean;
  /** The primary subscription's identity, applied to the whole socket. */
  readonly subs: Map<ChannelName, Subscription>;
  /** Channels with a subscribe in flight (V4), so a duplicate cannot race it. */
  readonly pending: Set<ChannelName>;
  rateWindowStart: number;
  rateCount: number;
  conn: Conn<ConnectionState> | undefined;
  closed: boolean;
}

/** An upgrade that admission refused: the socket opens only to receive the error and close. */
export interface Rejection {
  readonly rejected: CloseReason;
  readonly text: string;
}

export type SocketData = ConnectionState | Rejection;

export const isRejection = (data: SocketData): data is Rejection => 'rejected' in data;
