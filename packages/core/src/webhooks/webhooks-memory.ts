import Denque from 'denque';
import type { ApiKey } from '../types';
import { DEFAULT_WEBHOOK_QUEUE_LIMITS } from './webhooks';
import type {
  DroppedListener,
  QueuedEvent,
  WebhookEvent,
  WebhookEventName,
  WebhookQueue,
  WebhookQueueLimits,
} from './webhooks';

/** Where memory counts and presence report their transitions (synchronously, with the change). */
export interface WebhookSink {
  emit(key: ApiKey, event: WebhookEvent): void;
}

interface KeyQueue {
  /** Oldest first; ids increase with the sequence. */
  events: Denque<QueuedEvent>;
  /** The first `pending` events were read by a consumer and are not acknowledged. */
  pending: number;
  /** UTF-8 bytes of the events' JSON texts. */
  bytes: number;
  sequence: number;
  lease?: { owner: string; until: number };
}

/**
 * Webhook events of the memory engine. `eventsOf` is the key's switch: the events its record's
 * webhook sends, or null without a webhook (read at every event, so a change of the keys file
 * applies at once). `exists` tells whether the key still has a record: a deleted key's events
 * are forgotten at the next read, as the Redis engine deletes its stream with the key.
 */
export class MemoryWebhookQueue implements WebhookQueue, WebhookSink {
  private readonly queues = new Map<ApiKey, KeyQueue>();
  private readonly listeners: DroppedListener[] = [];

  constructor(
    private readonly eventsOf: (key: ApiKey) => readonly WebhookEventName[] | null,
    private readonly now: () => number = Date.now,
    private readonly exists: (key: ApiKey) => boolean = () => true,
    private readonly limits: WebhookQueueLimits = DEFAULT_WEBHOOK_QUEUE_LIMITS,
  ) {}

  /**
   * Stores the event; when the key's queue is then over a limit, its oldest events are dropped
   * (a batch being delivered included: its acknowledgement then finds nothing to remove) and the
   * listeners hear how many. An event over `maxBytes` by itself is dropped instead of stored.
   */
  emit(key: ApiKey, event: WebhookEvent): void {
    if (!this.eventsOf(key)?.includes(event.name)) return;
    const json = JSON.stringify(event);
    const size = Buffer.byteLength(json);
    const { maxEvents, maxBytes } = this.limits;
    if (size > maxBytes) {
      this.dropped(key, 1);
      return;
    }
    const queue = this.queueOf(key);
    let dropped = 0;
    while (queue.events.length >= maxEvents || queue.bytes + size > maxBytes) {
      const oldest = queue.events.shift();
      if (!oldest) break;
      queue.bytes -= Buffer.byteLength(oldest.json);
      if (queue.pending > 0) queue.pending -= 1;
      dropped += 1;
    }
    queue.sequence += 1;
    queue.events.push({ id: String(queue.sequence), storedAt: this.now(), json });
    queue.bytes += size;
    if (dropped > 0) this.dropped(key, dropped);
  }

  onDropped(listener: DroppedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  async append(key: ApiKey, event: WebhookEvent): Promise<void> {
    this.emit(key, event);
  }

  async lease(key: ApiKey, owner: string, ttlMs: number): Promise<boolean> {
    const queue = this.queueOf(key);
    const now = this.now();
    if (queue.lease && queue.lease.owner !== owner && queue.lease.until > now) return false;
    queue.lease = { owner, until: now + ttlMs };
    return true;
  }

  async next(
    key: ApiKey,
    _consumer: string,
    max: number,
    acknowledge: readonly string[] = [],
  ): Promise<QueuedEvent[]> {
    if (acknowledge.length > 0) await this.ack(key, acknowledge);
    const queue = this.live(key);
    if (!queue) return [];
    // Pending events are the oldest: a consumer reads from the front and acknowledges what it read.
    const count = Math.min(queue.pending > 0 ? queue.pending : max, max, queue.events.length);
    const out: QueuedEvent[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = queue.events.peekAt(i)!;
    if (queue.pending === 0) queue.pending = count;
    return out;
  }

  /**
   * Removes the given events. The dispatcher acknowledges the batch at the front, removed in
   * O(batch); ids elsewhere (not what the dispatcher sends) cost one pass over the queue.
   */
  async ack(key: ApiKey, ids: readonly string[]): Promise<void> {
    const queue = this.queues.get(key);
    if (!queue || ids.length === 0) return;
    const done = new Set(ids);
    const remove = (): void => {
      const e = queue.events.shift()!;
      queue.bytes -= Buffer.byteLength(e.json);
      done.delete(e.id);
    };
    let removed = 0;
    while (done.size > 0 && done.has(queue.events.peekFront()?.id ?? '')) {
      remove();
      removed += 1;
    }
    queue.pending = Math.max(0, queue.pending - removed);
    if (done.size === 0) return;
    const kept = new Denque<QueuedEvent>();
    const size = queue.events.length;
    let pending = 0;
    for (let i = 0; i < size; i++) {
      const e = queue.events.peekAt(i)!;
      if (done.has(e.id)) queue.bytes -= Buffer.byteLength(e.json);
      else {
        kept.push(e);
        if (i < queue.pending) pending += 1;
      }
    }
    queue.events = kept;
    queue.pending = pending;
  }

  async depth(key: ApiKey): Promise<number> {
    return this.live(key)?.events.length ?? 0;
  }

  private dropped(key: ApiKey, events: number): void {
    for (const listener of this.listeners) listener(key, events);
  }

  /** The key's queue, or undefined; a deleted key's queue is dropped here. */
  private live(key: ApiKey): KeyQueue | undefined {
    const queue = this.queues.get(key);
    if (queue && !this.exists(key)) {
      this.queues.delete(key);
      return undefined;
    }
    return queue;
  }

  private queueOf(key: ApiKey): KeyQueue {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { events: new Denque(), pending: 0, bytes: 0, sequence: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }
}
