import type {
  JoinResult,
  JsonValue,
  LeaveResult,
  Member,
  Protocol,
  Publication,
  Topic,
} from '@switchboard/core';
import type { Body } from '../api/request';
import type { ApiDeps } from '../api/deps';
import type { UpgradeRequest } from '../transport/types';
import type { PositionReport } from '../streams/topic-stream';

/**
 * A wire protocol the gateway speaks (docs/architecture.md, "Protocol dialects"). A dialect
 * reads what clients send and writes what they receive; it never holds state, never calls the
 * engine and never sends anything itself. The connection layer admits sockets, runs the
 * commands a dialect parses out of client frames, and delivers the frames it builds, without
 * ever asking which protocol a connection speaks.
 *
 * Adding a protocol is one folder under `protocols/` that exports a `Dialect`, and one line in
 * `protocols/index.ts`.
 */
export interface Dialect {
  /**
   * The engine namespace of this dialect's topics (`Topic.protocol`): a channel of one family is
   * apart from the channel of the same name in another (its messages, history, presence and
   * counts), except where presence reads a channel's identities across families. Also the
   * `protocol` label of the gateway's metrics.
   */
  readonly family: Protocol;

  // ---- Upgrade ----

  /**
   * What a WebSocket upgrade presents, read from its path, query and headers; `undefined` when
   * the path is not this dialect's. Admission checks it in its own order (docs/protocol.md).
   */
  upgrade(request: Pick<UpgradeRequest, 'path' | 'query' | 'headers'>): Upgrade | undefined;
  /** Sent right after `open` to a connection whose upgrade `greets`. */
  readonly greeting: string;

  // ---- Client frames ----

  /** A text frame (valid UTF-8, within the size and rate limits) as a command; `undefined`: nothing to do. */
  text(state: SocketView, text: string): Command | undefined;
  /** A binary frame, as base64, as a command. */
  binary(state: SocketView, base64: string): Command;

  // ---- Frames ----

  /** The error frame sent before a terminal close (codes 4500–4999). */
  closingError(text: string): string;
  /** A non-terminal error about one frame, of `channel` when given (the socket stays open). */
  frameError(state: SocketView, text: string, channel?: string): string;
  /** `body` (the text of a JSON object) as a secondary subscription of `channel` receives it. */
  stamp(body: string, channel: string): string;
  /** A publication marked `binary` goes out as a binary frame (else its body is text). */
  readonly binaryFrames: boolean;

  // ---- Local topics ----

  /**
   * The variants of a topic on this node, as prefixes of its local uWS topic names: every
   * subscription receives the `primary` variant, except the secondaries of a socket with several
   * channels, which receive the `secondary` (stamped) one. A dialect without secondaries has none.
   */
  readonly variants: { readonly primary: string; readonly secondary?: string };

  // ---- Ordered streams (docs/protocol.md, "History and recovery") ----

  /** Whether a stream publication's text is a JSON object, which gets its offset spliced in. */
  isObject(publication: Publication): boolean;
  /** `publication` as an opted-in subscription receives it; `channel` stamps a secondary. */
  offsetFrame(publication: Publication, isObject: boolean, offset: number, channel?: string): string;
  /** Where a subscription stands; `channel` stamps a secondary. */
  positionFrame(topicChannel: string, report: PositionReport, channel?: string): string;

  // ---- Presence ----

  readonly presence: PresenceFrames;

  // ---- Kicks ----

  readonly kick: {
    /** A kick that names `uuid` or `user` can match this dialect's subscriptions. */
    readonly targeted: boolean;
    /**
     * With it, a socket matched on some of its secondaries only is taken out of those channels
     * and sent this frame instead of being closed.
     */
    readonly kicked?: (sub: ChannelView, reason: string) => string;
  };

  // ---- REST ----

  /** The cluster API's POST routes of this dialect (docs/openapi.yaml), by path. */
  readonly routes: Readonly<Record<string, RouteHandler>>;
}

/** How a dialect announces presence (docs/protocol.md, "Presence"). */
export interface PresenceFrames {
  /** What a join reads for the joiner: one member per connection (`entries`) or per identity. */
  readonly listing: 'entries' | 'identities';
  /** The joiner's list, or the answer to a member-list request (`total`: entries or identities). */
  memberList(sub: ChannelView, members: Member[], total: number): string;
  /** What the channel hears when `sub` joined (`joined.listed`: the list the joiner got). */
  joined(sub: ChannelView, member: Member, joined: JoinResult): ChannelEvent | undefined;
  /** What the channel hears when the node rewrites `sub`'s entry after an outage. */
  rejoined(sub: ChannelView, member: Member, joined: JoinResult): ChannelEvent | undefined;
  /** A leave's event reads the channel's roster (`ROSTER_LIMIT` entries) first. */
  readonly leaveCarriesRoster: boolean;
  /** What the channel hears when an entry left (`roster` when `leaveCarriesRoster`). */
  left(topic: Topic, left: LeaveResult, roster: Member[] | undefined): ChannelEvent | undefined;
}

/** What a WebSocket upgrade presents: the API key, the primary channel, the identity and options. */
export interface Upgrade {
  /** The API key as presented (empty when absent). */
  readonly key: string;
  /** The primary channel, decoded. */
  readonly channel: string;
  /** A JWT for the channel, if one was presented. */
  readonly token: string | undefined;
  readonly uuid: string | undefined;
  /** The `user` presented (a JWT's `user` claim wins over it). */
  readonly user: string | undefined;
  /** Presence asked for (a presence channel has it anyway). */
  readonly presence: boolean;
  /** Offsets and recovery asked for (a resume position asks too). */
  readonly recover: boolean;
  readonly notifySelf: boolean;
  /** The connection is sent the dialect's `greeting` right after `open`. */
  readonly greets: boolean;
  /** The resume position as sent (checked by admission). */
  readonly since: string | undefined;
  readonly epoch: string | undefined;
}

/** A frame for everyone in a channel. */
export interface ChannelEvent {
  readonly body: string;
  /** Secondary subscriptions receive it stamped (`Dialect.stamp`). */
  readonly stampable: boolean;
}

/** How a client message is relayed (`relayClientMessage`). */
export interface RelayOptions {
  /** The body is a JSON object text that secondaries receive stamped. */
  readonly stampable: boolean;
  /** A direct message: only the subscriptions whose `user` is this receive it. */
  readonly to?: string;
  /** The body is base64 of a binary frame. */
  readonly binary?: boolean;
  /** The body is a JSON text that carries a binary frame as base64. */
  readonly systemBinary?: boolean;
}

/** Builds the answer frame of a command: success without `error`; `retry`: send it again unchanged. */
export type Answer = (error?: string, retry?: boolean) => string;

/** A subscribe as the client asked for it; the connection layer checks and carries it out. */
export interface SubscribeRequest {
  readonly token: string | undefined;
  /** The `user` presented, or `undefined` to present the socket's own. */
  readonly user: JsonValue | undefined;
  readonly uuid: string | undefined;
  readonly presence: boolean;
  readonly recover: boolean;
  /** The resume position as sent (checked by the connection layer). */
  readonly since: unknown;
  readonly epoch: unknown;
}

/** What a client frame asks of the connection. */
export type Command =
  | {
      readonly type: 'publish';
      /** A secondary channel of the socket; absent: its primary. */
      readonly channel?: string;
      readonly body: string;
      readonly options: RelayOptions;
    }
  | { readonly type: 'error'; readonly text: string; readonly channel?: string }
  /** A frame for the sender alone (a refusal the dialect decided by itself). */
  | { readonly type: 'reply'; readonly frame: string }
  | {
      readonly type: 'subscribe';
      readonly channel: string;
      readonly request: SubscribeRequest;
      readonly answer: Answer;
    }
  | { readonly type: 'unsubscribe'; readonly channel: string; readonly answer: Answer }
  | { readonly type: 'members'; readonly channel: string; readonly answer: Answer };

/** A REST route: the request's JSON body to the response's. */
export type RouteHandler = (ctx: ApiDeps, body: Body) => Promise<object>;

/** What a dialect reads of a connection's subscription. */
export interface ChannelView {
  readonly channel: string;
  /** The socket's primary channel (its URL's), as opposed to a secondary it added. */
  readonly primary: boolean;
}

/** What a dialect reads of a connection. */
export interface SocketView {
  /** The primary channel's name. */
  readonly primary: string;
  readonly subs: { has(channel: string): boolean };
}
