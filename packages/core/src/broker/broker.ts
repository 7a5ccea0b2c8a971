import type { HistoryRetention, StreamPosition } from '../history/history';
import type { ApiKey, ConnId, NodeId, Topic } from '../types';

/**
 * A message on its way to every connection subscribed to `topic`, on every node.
 *
 * `body` is the frame exactly as connections of the topic's protocol receive it (for V4: as the
 * primary channel's connections receive it; secondaries get it stamped with `system::channel`
 * when `stampable`). It is serialized once, where the message enters the cluster, and never
 * again per node or per recipient.
 */
export interface Publication {
  readonly topic: Topic;
  readonly body: string;
  /** `body` is base64 of a binary frame (V3 binary relay). */
  readonly binary?: boolean;
  /** `body` is a JSON object text, so a `system::channel` stamp can be spliced in (V4). */
  readonly stampable?: boolean;
  /**
   * The node the message entered on. That node has already delivered it to its own connections
   * (so local fan-out never waits for, or depends on, the engine) and ignores it when the
   * engine hands it back; sender exclusion (`notify_self`) is therefore always a local matter.
   */
  readonly origin: NodeId;
  /** V4 direct message: only connections whose `user` identity equals this receive it. */
  readonly to?: string;
  /**
   * The connection a client message came from, so the stream delivery to opted-in
   * subscriptions can leave the sender out unless its `notify_self` is on (the origin node
   * delivers stream publications when the engine hands them back, not when they enter).
   */
  readonly sender?: ConnId;
  /** Where the message entered: a REST publish or a client frame (presence events: neither). */
  readonly source?: 'api' | 'client';
  /** When the origin node accepted it (ms since the epoch), for publish-to-delivery latency. */
  readonly acceptedAt?: number;
  /**
   * Its place in the topic's stream (see `StreamPosition`), set by the engine on publications
   * published with a retention: every node, the origin included, receives them carrying both.
   */
  readonly offset?: number;
  readonly epoch?: string;
}

/** Which connections a kick applies to (SPEC §4, rest-interface §4.1 rules 1 to 6). */
export interface KickSelector {
  readonly key: ApiKey;
  readonly uuid?: string;
  readonly user?: string;
  readonly channel?: string;
  readonly reason: string;
}

/** Node-wide commands, executed by every node including the sender. */
export type ControlCommand =
  | { readonly type: 'kick'; readonly selector: KickSelector }
  | { readonly type: 'key-changed'; readonly key: ApiKey }
  | { readonly type: 'node-dead'; readonly nodeId: NodeId };

export interface BrokerHandlers {
  message(publication: Publication): void;
  control(command: ControlCommand): void;
}

/**
 * Broker: fan-out of publications and control commands between gateway nodes.
 *
 * Contract, for every implementation:
 * - Delivery is at most once. A publication reaches every node that was subscribed to its topic
 *   when the engine accepted it, the publishing node included; a node receives nothing for topics
 *   it is not subscribed to.
 * - Publications from one publisher to one topic arrive in the order they were published.
 * - `publish` with a `retention` makes the publication the next one of its topic's stream: the
 *   engine assigns the next offset atomically with storing it (unless `retention.size` is 0) and
 *   fanning it out (on Redis: one script in the topic's slot), so every node receives the
 *   stream's publications in one order, each carrying `offset` and `epoch`, and `publish`
 *   resolves that position. Without `retention` (presence events, direct messages, binary frames)
 *   it is a plain fan-out: no offset, the stream does not advance, `publish` resolves `undefined`.
 *   Callers never set `offset` or `epoch` themselves.
 * - `publish` and `publishControl` resolve once the engine has accepted the message and reject with
 *   `EngineUnavailableError` when it cannot; a message is never reported accepted when it was not.
 * - `subscribe`/`unsubscribe` are idempotent per topic; callers keep their own reference counts.
 *   Subscriptions survive engine reconnects: the implementation restores them itself. A
 *   `subscribe` while the engine is unreachable may reject; the topic is still remembered and
 *   restored when the engine is back (callers also re-subscribe on availability, idempotently).
 * - Handlers are set once with `setHandlers` before the first subscribe; they must not throw.
 * - Control commands reach every live node, the sender included.
 */
export interface Broker {
  setHandlers(handlers: BrokerHandlers): void;
  subscribe(topic: Topic): Promise<void>;
  unsubscribe(topic: Topic): Promise<void>;
  publish(publication: Publication, retention?: HistoryRetention): Promise<StreamPosition | undefined>;
  publishControl(command: ControlCommand): Promise<void>;
  close(): Promise<void>;
}
