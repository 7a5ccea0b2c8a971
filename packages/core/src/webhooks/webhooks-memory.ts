import type { ApiKey } from '../types';
import type { QueuedEvent, WebhookEvent, WebhookEventName, WebhookQueue } from './webhooks';

/** Where memory counts and presence report their transitions (synchronously, with the change). */
export interface WebhookSink {
  emit(key: ApiKey, event: WebhookEvent): void;
}

interface KeyQueue {
  events: QueuedEvent[];
  /** Ids read by a consumer and not acknowledged. */
  pending: Set<string>;
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

  constructor(
    private readonly eventsOf: (key: ApiKey) => readonly WebhookEventName[] | null,
    private readonly now: () => number = Date.now,
    private readonly exists: (key: ApiKey) => boolean = () => true,
  ) {}

  emit(key: ApiKey, event: WebhookEvent): void {
    if (!this.eventsOf(key)?.includes(event.name)) return;
    const queue = this.queueOf(key);
    queue.sequence += 1;
    queue.events.push({ id: String(queue.sequence), storedAt: this.now(), json: JSON.stringify(event) });
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
    const pending = queue.events.filter((e) => queue.pending.has(e.id));
    if (pending.length > 0) return pending.slice(0, max);
    const fresh = queue.events.slice(0, max);
    for (const e of fresh) queue.pending.add(e.id);
    return fresh;
  }

  async ack(key: ApiKey, ids: readonly string[]): Promise<void> {
    const queue = this.queues.get(key);
    if (!queue) return;
    const done = new Set(ids);
    queue.events = queue.events.filter((e) => !done.has(e.id));
    for (const id of ids) queue.pending.delete(id);
  }

  async depth(key: ApiKey): Promise<number> {
    return this.live(key)?.events.length ?? 0;
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
      queue = { events: [], pending: new Set(), sequence: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }
}
