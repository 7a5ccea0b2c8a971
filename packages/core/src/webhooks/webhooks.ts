import type { ApiKey, ChannelName } from '../types';

/** Every webhook event a key can subscribe to (docs/webhooks.md). */
export const WEBHOOK_EVENTS = [
  'channel_occupied',
  'channel_vacated',
  'member_added',
  'member_removed',
  'client_event',
  'cache_miss',
] as const;

export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

/**
 * The events of a webhook without `events`: all but `client_event` and `cache_miss` (opt-in, as
 * each webhook type is on Pusher: both can come at the rate clients send or subscribe).
 */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEventName[] = [
  'channel_occupied',
  'channel_vacated',
  'member_added',
  'member_removed',
];

/** A key's webhook, as its record holds it. */
export interface WebhookConfig {
  /** An `http:` or `https:` URL. */
  readonly url: string;
  /** The events sent; absent: `DEFAULT_WEBHOOK_EVENTS`. */
  readonly events?: readonly WebhookEventName[];
}

/** One event as the backend receives it in a batch's `events` (Pusher's field names). */
export interface WebhookEvent {
  readonly name: WebhookEventName;
  readonly channel: ChannelName;
  readonly user_id?: string;
  readonly event?: string;
  readonly data?: unknown;
  readonly socket_id?: string;
}

/** An event stored for delivery. */
export interface QueuedEvent {
  /** Increases with storage order within a key; a delivery id is derived from a batch's ids. */
  readonly id: string;
  /** When the event was stored (ms since the epoch): the retry window counts from it. */
  readonly storedAt: number;
  /**
   * The event as JSON text (a `WebhookEvent`), stored so: the dispatcher puts it in a request's
   * body as it is, without parsing and encoding it again.
   */
  readonly json: string;
}

/** The events a webhook sends. */
export const webhookEvents = (webhook: WebhookConfig): readonly WebhookEventName[] =>
  webhook.events ?? DEFAULT_WEBHOOK_EVENTS;

/**
 * How much one key's queue holds at most (`WEBHOOK_QUEUE_MAX_EVENTS`, `WEBHOOK_QUEUE_MAX_BYTES`;
 * docs/webhooks.md, "Backlog"). Over either, the oldest events are dropped.
 */
export interface WebhookQueueLimits {
  readonly maxEvents: number;
  /** UTF-8 bytes of the stored events' JSON texts. */
  readonly maxBytes: number;
}

/** Upper bound of `WEBHOOK_QUEUE_MAX_EVENTS`: the Redis streams' own cap (webhook-scripts.ts). */
export const MAX_WEBHOOK_QUEUE_EVENTS = 100_000;

export const DEFAULT_WEBHOOK_QUEUE_LIMITS: WebhookQueueLimits = {
  maxEvents: 10_000,
  maxBytes: 16 * 1024 * 1024,
};

/** Hears that `events` of a key's oldest events were dropped from its full queue. */
export type DroppedListener = (key: ApiKey, events: number) => void;

/**
 * WebhookQueue: the events stored for each key's webhook, read by the dispatcher.
 *
 * Contract, for every implementation:
 * - Channel and presence events are produced by `ConnectionCounts` and `PresenceStore` of the same
 *   engine, atomically with the transition that causes them, and only for keys whose record has a
 *   webhook listing the event (the key store switches production on and off with the record).
 *   `append` adds an event the gateway produces itself (`client_event`, `cache_miss`), and also
 *   stores it only when the key's webhook lists it.
 * - Events of one key keep their storage order in every read.
 * - `lease` grants a key to one owner at a time until `ttlMs` after the owner's last successful
 *   call; the owner renews it with the same call. Only the lease holder should read.
 * - `next` returns, first, the events read earlier by any consumer and not acknowledged (a dead
 *   dispatcher's batch, unchanged), otherwise up to `max` new ones; `ack` removes events for good.
 *   `next(…, acknowledge)` acknowledges `acknowledge` first, as `ack` would, in the same call
 *   (the dispatcher's one round trip per batch).
 * - `depth` counts stored, unacknowledged events of a key.
 * - A key's queue holds at most its limits (`WebhookQueueLimits`): storing over them drops the
 *   oldest events and tells `onDropped` listeners how many (see each engine for what it checks
 *   at each write; `enforceLimits` applies them to what is stored).
 * - Failures reject with `EngineUnavailableError`.
 */
export interface WebhookQueue {
  append(key: ApiKey, event: WebhookEvent): Promise<void>;
  lease(key: ApiKey, owner: string, ttlMs: number): Promise<boolean>;
  next(key: ApiKey, consumer: string, max: number, acknowledge?: readonly string[]): Promise<QueuedEvent[]>;
  ack(key: ApiKey, ids: readonly string[]): Promise<void>;
  depth(key: ApiKey): Promise<number>;
  /**
   * Drops the oldest events while the key's queue is over its limits, for an engine whose writes
   * do not all apply them (Redis: channel and presence events); the dispatcher holding the key
   * calls it each second.
   */
  enforceLimits?(key: ApiKey): Promise<void>;
  /**
   * Registers a listener for events dropped from a full queue (the dispatcher counts and logs
   * them); returns what unregisters it.
   */
  onDropped?(listener: DroppedListener): () => void;
}
