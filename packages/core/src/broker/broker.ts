import { z } from 'zod';
import type { HistoryRetention, StreamPosition } from '../history/position';
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

/** Which connections a kick applies to (`POST /api/v4/kick` in docs/openapi.yaml; docs/protocol.md, "Kicks"). */
export interface KickSelector {
  readonly key: ApiKey;
  readonly uuid?: string;
  readonly user?: string;
  readonly channel?: string;
  /**
   * Only the connections signed in as this user (a protocol's user authentication: Pusher's
   * `terminate_connections`), whatever their channels; `uuid`, `user` and `channel` are then not
   * matched by nodes that know this field (a node that does not matches `channel` alone, so a
   * sender also names a channel only such connections are in).
   */
  readonly signedIn?: string;
  readonly reason: string;
}

/**
 * Set on a command sent with `Broker.requestControl`: every node that executes it answers the
 * count its handler returned on `origin`'s reply channel, tagged with `id`. A node that does not
 * know this field (an older one, during a rolling upgrade) executes the command and answers
 * nothing; the requester then stops waiting at its deadline.
 */
export interface ControlRequest {
  readonly id: string;
  /** The broker that waits for the replies (its reply channel's name is built from it). */
  readonly origin: NodeId;
}

/** Node-wide commands, executed by every node including the sender. */
export type ControlCommand = (
  | { readonly type: 'kick'; readonly selector: KickSelector }
  | { readonly type: 'key-changed'; readonly key: ApiKey }
  | { readonly type: 'node-dead'; readonly nodeId: NodeId }
) & { readonly request?: ControlRequest };

/** A command as `requestControl` takes it: the broker adds the `request` itself. */
export type RequestedCommand = Extract<ControlCommand, { type: 'kick' }> & { readonly request?: never };

/** One node's answer to a requested command, on the requester's reply channel. */
export interface ControlReply {
  /** The `ControlRequest.id` it answers. */
  readonly id: string;
  /** The node that answered (for logs; replies are counted, not matched to nodes). */
  readonly node: NodeId;
  /** What the command did there: a kick's sockets closed or taken out of a channel. */
  readonly count: number;
}

/** What `requestControl` collected by its deadline. */
export interface ControlAnswer {
  /** The sum of the replies' counts. */
  readonly total: number;
  /** Replies received. */
  readonly replies: number;
  /** The engine's count of the command's receivers (every node's subscription to the control channel). */
  readonly receivers: number;
  /** Every receiver replied before the deadline: `total` is exact. */
  readonly complete: boolean;
}

const nonEmpty = z.string().min(1);
/** Request ids and node ids are short: a reply channel's name and a log field are built from them. */
const requestSchema = z.object({ id: nonEmpty.max(64), origin: nonEmpty.max(256) }).optional();

/**
 * The wire form of every control command, checked where a message enters a node. Unknown fields
 * are dropped (an older node reads what it knows of a newer node's command); an unknown `type`
 * or a command missing a field fails, so the message is dropped, never half-executed.
 */
const controlCommandSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('kick'),
    request: requestSchema,
    selector: z.object({
      key: nonEmpty,
      uuid: z.string().optional(),
      user: z.string().optional(),
      channel: z.string().optional(),
      signedIn: z.string().optional(),
      reason: z.string(),
    }),
  }),
  z.object({ type: z.literal('key-changed'), key: nonEmpty, request: requestSchema }),
  z.object({ type: z.literal('node-dead'), nodeId: nonEmpty, request: requestSchema }),
]);

const replySchema = z.object({
  id: nonEmpty.max(64),
  node: z.string().max(256),
  count: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
});

/** A reply from its JSON text, or undefined when it is not one (it is then ignored). */
export function parseControlReply(text: string): ControlReply | undefined {
  try {
    const parsed = replySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What kind of message a node set aside because it did not parse. */
export type DroppedKind = 'control' | 'publication';

/**
 * Why a control message was dropped: a fixed set, so a log line per problem stays bounded.
 * `unknown type` is what a newer node's new command looks like to an older one (rolling upgrade).
 */
export type ControlProblem =
  'not JSON' | 'not a command' | 'unknown type' | `invalid ${ControlCommand['type']}`;

/** A control command from its JSON text, or the problem that makes it not one. */
export function parseControlCommand(text: string): { command: ControlCommand } | { problem: ControlProblem } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'not JSON' };
  }
  const parsed = controlCommandSchema.safeParse(value);
  // JSON holds no `undefined`, so the optional selector fields are absent or strings, as the type says.
  if (parsed.success) return { command: parsed.data as ControlCommand };
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { problem: 'not a command' };
  const type = (value as { type?: unknown }).type;
  if (type === 'kick' || type === 'key-changed' || type === 'node-dead')
    return { problem: `invalid ${type}` };
  return { problem: typeof type === 'string' ? 'unknown type' : 'not a command' };
}

export interface BrokerHandlers {
  message(publication: Publication): void;
  /**
   * Executes a control command. A number returned is what the command did on this node (a kick:
   * the sockets it kicked), the count a requested command's reply carries; nothing counts 0.
   */
  control(command: ControlCommand): number | void;
  /**
   * The broker's subscriptions were restored after its connection dropped: whatever was
   * published meanwhile was lost to this node (pub/sub is at most once). Streams use it to
   * catch up from history.
   */
  resubscribed?(): void;
  /**
   * A message from the engine did not parse (another node's newer or broken command, a truncated
   * publication) and was dropped; the node carries on. `problem` is one of a small fixed set.
   */
  dropped?(kind: DroppedKind, problem: string): void;
  /** `message` or `control` threw on a message; the broker carries on with the next one. */
  failed?(kind: DroppedKind, error: unknown): void;
}

/** Tells `handlers.failed` that a handler threw; never throws itself (it runs in a listener). */
export function reportHandlerFailure(handlers: BrokerHandlers, kind: DroppedKind, error: unknown): void {
  try {
    handlers.failed?.(kind, error);
  } catch {
    // The reporter failed as well: nothing is left to tell.
  }
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
 *   A handler that throws anyway is reported to `failed` and never stops the broker or the
 *   process; a message that does not parse is reported to `dropped` and never reaches a handler.
 * - Control commands reach every live node, the sender included.
 * - `requestControl` publishes a command with a `request` and collects the replies: every
 *   broker that receives it, the sender's included, replies once with the count its `control`
 *   handler returned (0 without handlers: a process that holds no connections, such as the account
 *   API or the CLI; none when the handler threw). It expects as many replies as the engine counted
 *   receivers when it accepted the command (Redis: PUBLISH/SPUBLISH's answer), resolves as soon as
 *   they are in (`complete`), or at `deadlineMs` with what arrived (`complete: false`: a node is
 *   slow, stopped or too old to reply). It never waits past the deadline, and forgets the request
 *   then: a late reply is ignored. It rejects, as `publishControl` does, only when the engine did
 *   not accept the command.
 */
export interface Broker {
  setHandlers(handlers: BrokerHandlers): void;
  subscribe(topic: Topic): Promise<void>;
  unsubscribe(topic: Topic): Promise<void>;
  publish(publication: Publication, retention?: HistoryRetention): Promise<StreamPosition | undefined>;
  publishControl(command: ControlCommand): Promise<void>;
  requestControl(command: RequestedCommand, deadlineMs: number): Promise<ControlAnswer>;
  close(): Promise<void>;
}
