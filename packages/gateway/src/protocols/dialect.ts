import type {
  ApiKeyRecord,
  CloseReason,
  Config,
  ConnId,
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
import type { HttpReply, HttpRequest, UpgradeRequest } from '../transport/types';
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
  /** Sent right after `open` to a connection whose upgrade `greets` (unless `greet` is given). */
  readonly greeting: string;
  /** Builds the greeting from the connection's id, for a protocol whose greeting names it (Pusher's `socket_id`). */
  readonly greet?: (id: ConnId, config: Config) => string;
  /**
   * The connection ids of this dialect's sockets are shown to clients, so they take the form
   * `<node number>.<counter>` (Pusher's socket ids), unique cluster-wide; without it a
   * connection gets the node's own id form, which clients never see.
   */
  readonly socketIds?: boolean;
  /**
   * How the dialect closes a connection for a catalog reason, or for a code of its own (an
   * `Upgrade.refused`): the close code, the error frame sent first (if any) and the close
   * reason text. Absent: the catalog's code, and `closingError` before terminal codes (4500–4999).
   */
  readonly closeWith?: (reason: CloseReason | number, text: string) => DialectClose;
  /**
   * Server pings at the protocol level (connections/keepalive.ts): after `idleSeconds` without a
   * frame from the client the server sends `ping`; without a frame within `pongSeconds` after it,
   * the connection is closed with `timeoutCode` (through `closeWith`).
   */
  readonly keepalive?: {
    idleSeconds(config: Config): number;
    pongSeconds(config: Config): number;
    readonly ping: string;
    readonly timeoutCode: number;
    readonly timeoutText: string;
  };

  // ---- Client frames ----

  /** A text frame (valid UTF-8, within the size and rate limits) as a command; `undefined`: nothing to do. */
  text(state: SocketView, text: string, config: Config): Command | undefined;
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
  /**
   * Online users of a protocol with sign-in and watchlists (connections/users.ts): a user's own
   * topic (`channel`), where its signed-in connections are present and its watchers listen, and
   * the frames telling watchers that users came online or went offline (`presence.left` gives the
   * offline frame when the cluster removes a dead node's entries).
   */
  readonly users?: {
    channel(user: string): string;
    online(users: readonly string[]): string;
    offline(users: readonly string[]): string;
  };

  /**
   * Subscription counts pushed to subscribers (Pusher's `subscription_count` events;
   * fanout/count-events.ts). Absent: nothing is read or sent for this dialect's channels.
   */
  readonly countEvents?: CountEventFrames;

  // ---- Kicks ----

  readonly kick: {
    /** A kick that names `uuid` or `user` can match this dialect's subscriptions. */
    readonly targeted: boolean;
    /**
     * With it, a socket matched on some of its secondaries only is taken out of those channels
     * and sent this frame instead of being closed.
     */
    readonly kicked?: (sub: ChannelView, reason: string) => string;
    /**
     * With it, this dialect's sockets still open when their key is deleted (`keys delete`, the
     * account API) are closed with this code and text on every gateway, once the `key-changed`
     * announcement shows the key gone (`closeRevoked`). Without it they stay open until they
     * close: PieSocket keys are checked when a socket connects.
     */
    readonly revoked?: { readonly code: number; readonly text: string };
  };

  // ---- REST ----

  /** The cluster API's POST routes of this dialect (docs/openapi.yaml), by path. */
  readonly routes: Readonly<Record<string, RouteHandler>>;
  /**
   * An HTTP API of the protocol's own on the gateway port (Pusher's `/apps/{app_id}/…`, with its
   * own request signing, methods and error bodies): every request whose path starts with
   * `prefix` is handed to `handle`, which answers it completely.
   */
  readonly http?: DialectHttp;
}

/** Which subscriptions hear their channel's count, and in what frame (`Dialect.countEvents`). */
export interface CountEventFrames {
  /**
   * Whether subscribers of `channel` of the key `record` hear its count; checked at every
   * subscribe and unsubscribe of the dialect's sockets, so it must cost nothing when off.
   */
  counted(record: ApiKeyRecord, channel: string): boolean;
  /** The frame announcing `count` subscriptions (cluster-wide, of the dialect's family) of `channel`. */
  frame(channel: string, count: number): string;
}

/** How a dialect closes a connection (`Dialect.closeWith`). */
export interface DialectClose {
  readonly code: number;
  /** Sent before the close frame. */
  readonly frame: string | undefined;
  /** The close frame's reason (cut to 123 bytes by the sender). */
  readonly text: string;
}

/** What a dialect's own HTTP API may use: the cluster API's dependencies and its failed-authentication limits. */
export interface DialectHttpDeps extends ApiDeps {
  /**
   * Runs `check` under the per-address failed-authentication limit (docs/security.md): refused
   * with the limiter's 429 while the address is over it; a `failed` answer counts against it.
   */
  readonly authFailures: {
    readonly tracking: boolean;
    check(request: HttpRequest): void;
    failed(request: HttpRequest): void;
  };
  /**
   * Delivers a publication this node accepted to its own connections, leaving out the connection
   * `except` when it is one of them (other nodes leave it out by the publication's `sender`).
   */
  deliverExcept(publication: Publication, except: ConnId | undefined, streamed: boolean): void;
}

/** A dialect's own HTTP API (`Dialect.http`). */
export interface DialectHttp {
  /** Paths this API answers, by prefix (`/apps/`). */
  readonly prefix: string;
  handle(ctx: DialectHttpDeps, request: HttpRequest): HttpReply | Promise<HttpReply>;
}

/** How a dialect announces presence (docs/protocol.md, "Presence"). */
export interface PresenceFrames {
  /** What a join reads for the joiner: one member per connection (`entries`) or per identity. */
  readonly listing: 'entries' | 'identities';
  /** How many members the joiner's list holds at most; absent: `ROSTER_LIMIT`. */
  readonly listLimit?: (config: Config) => number;
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
  /**
   * The primary channel, decoded; `undefined` for a protocol whose URL names none (Pusher's
   * `/app/{key}`): the connection then enters channels by subscribe commands only.
   */
  readonly channel: string | undefined;
  /** The upgrade is refused with this code of the dialect's own (Pusher's 4007, say), after the draining check. */
  readonly refused?: { readonly code: number; readonly text: string };
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
  /** The connection the event is about does not receive it (a Pusher member never hears of its own arrival). */
  readonly excludesSubject?: boolean;
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
  /**
   * The `client_event` webhook's `data` is a string: the message's own string `data`, else its
   * JSON text (Pusher's webhook format); without it, `data` as the message has it.
   */
  readonly textData?: boolean;
}

/**
 * Builds the answer frame of a command: success without `error`; `retry`: send it again
 * unchanged. `undefined`: nothing is sent (a protocol that answers only some outcomes).
 */
export type Answer = (error?: string, retry?: boolean) => string | undefined;

/** A subscribe as the client asked for it; the connection layer checks and carries it out. */
export interface SubscribeRequest {
  /**
   * The dialect verified the channel's authorization with its own scheme (Pusher's HMAC `auth`),
   * so the connection layer's JWT check is skipped.
   */
  readonly authorized?: boolean;
  readonly token: string | undefined;
  /** The `user` presented, or `undefined` to present the socket's own. */
  readonly user: JsonValue | undefined;
  readonly uuid: string | undefined;
  readonly presence: boolean;
  readonly recover: boolean;
  /** What the member carries besides its identity (`Member.info`). */
  readonly info?: JsonValue;
  /**
   * A presence subscription is refused when the channel already has this many identities,
   * cluster-wide, and the subscriber's is not one of them (read just before the join, so
   * concurrent joins of new identities may pass it together).
   */
  readonly maxIdentities?: number;
  /**
   * Right after the success answer, the subscriber is sent the channel's latest publication
   * still in its history, or `miss` when there is none (and the key's `cache_miss` webhook event
   * is stored): Pusher's cache channels.
   */
  readonly replayLast?: { readonly miss: string };
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
      /**
       * A per-socket rate of these publishes (besides the frame rate of every socket): over
       * `perSecond` in one second the publish is dropped and `refusal` sent; the socket stays open.
       */
      readonly limit?: { readonly perSecond: number; readonly refusal: string };
    }
  | { readonly type: 'error'; readonly text: string; readonly channel?: string }
  /** A frame for the sender alone (a refusal the dialect decided by itself). */
  | { readonly type: 'reply'; readonly frame: string }
  /**
   * The connection signs in as `user` (its dialect verified the credentials): kicks of that
   * signed-in user match it (`KickSelector.signedIn`); `frame` answers the sender.
   */
  | {
      readonly type: 'signin';
      readonly user: string;
      readonly frame: string;
      /** Users whose coming online and going offline it is told (`Dialect.users`). */
      readonly watchlist?: readonly string[];
    }
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
  readonly id: ConnId;
  /** The key's record (its secret signs a protocol's own channel authorizations). */
  readonly record: ApiKeyRecord;
  /** The primary channel's name ('' for a socket without one). */
  readonly primary: string;
  /** The user it signed in as (`Command` 'signin'), if it did. */
  readonly signedIn?: string | undefined;
  readonly subs: {
    has(channel: string): boolean;
    get(channel: string): { readonly user: JsonValue | undefined } | undefined;
  };
}
