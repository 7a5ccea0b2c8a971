import type { ApiKey } from '../types';
import { DEFAULT_WEBHOOK_QUEUE_LIMITS } from './webhooks';
import type {
  DroppedListener,
  QueuedEvent,
  WebhookEvent,
  WebhookQueue,
  WebhookQueueLimits,
} from './webhooks';
import { guard } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';
import { webhookAppend, webhookLease, webhookRead, webhookTrim } from '../redis/webhook-scripts';

/** The consumer group of every key's event stream. */
const GROUP = 'dispatch';

/** `webhookRead`'s reply, {ids separated by spaces, event JSON texts separated by newlines}. */
function toQueued(reply: unknown): QueuedEvent[] {
  const [ids, events] = reply as [string, string];
  if (!ids) return [];
  const idList = ids.split(' ');
  const jsons = events.split('\n');
  const out: QueuedEvent[] = new Array(idList.length);
  for (let i = 0; i < idList.length; i++) {
    const id = idList[i]!;
    out[i] = { id, storedAt: Number(id.slice(0, id.indexOf('-'))), json: jsons[i]! };
  }
  return out;
}

/**
 * Webhook events in one Redis stream per key (in the key's slot, written by the counts and
 * presence scripts), read through the consumer group `dispatch` by one script call per batch
 * (`webhookRead`): it acknowledges the previous batch, then takes over every pending entry
 * (`XAUTOCLAIM` from 0, so a dead consumer's batch comes back whole), otherwise reads new ones
 * (`XREADGROUP >`). Acknowledging also deletes, so `XLEN` is the depth. An entry is one field,
 * `e`, the event's JSON text as the backend receives it; a client event also has `b`, its size.
 *
 * Limits: `append` (the gateway's own events: client events, cache misses) applies both limits before storing (`webhookAppend`); the
 * channel and presence events the other scripts store (which do not know the configured limits)
 * are kept to `WEBHOOK_STREAM_MAX` entries there, and to the limits by `enforceLimits`, which the
 * dispatcher holding the key calls each second.
 */
export class RedisWebhookQueue implements WebhookQueue {
  private readonly listeners: DroppedListener[] = [];

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly limits: WebhookQueueLimits = DEFAULT_WEBHOOK_QUEUE_LIMITS,
  ) {}

  async append(key: ApiKey, event: WebhookEvent): Promise<void> {
    const dropped = await guard(this.client, () =>
      webhookAppend.run(
        this.client,
        [this.keys.webhookEvents(key), this.keys.webhookBytes(key), this.keys.webhookSwitch(key)],
        [JSON.stringify(event), this.limits.maxEvents, this.limits.maxBytes, event.name],
      ),
    );
    this.dropped(key, Number(dropped));
  }

  async enforceLimits(key: ApiKey): Promise<void> {
    const dropped = await guard(this.client, () =>
      webhookTrim.run(
        this.client,
        [this.keys.webhookEvents(key), this.keys.webhookBytes(key)],
        [this.limits.maxEvents, this.limits.maxBytes],
      ),
    );
    this.dropped(key, Number(dropped));
  }

  private dropped(key: ApiKey, events: number): void {
    if (events > 0) for (const listener of this.listeners) listener(key, events);
  }

  onDropped(listener: DroppedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  async lease(key: ApiKey, owner: string, ttlMs: number): Promise<boolean> {
    const held = await guard(this.client, () =>
      webhookLease.run(this.client, [this.keys.webhookLease(key)], [owner, Math.max(1, Math.round(ttlMs))]),
    );
    return held === 1;
  }

  async next(
    key: ApiKey,
    consumer: string,
    max: number,
    acknowledge: readonly string[] = [],
  ): Promise<QueuedEvent[]> {
    const reply = await guard(this.client, () =>
      webhookRead.run(
        this.client,
        [this.keys.webhookEvents(key), this.keys.webhookBytes(key)],
        [GROUP, consumer, max, acknowledge.join(' ')],
      ),
    );
    return toQueued(reply);
  }

  async ack(key: ApiKey, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    // One script call (one slot), so an acknowledged entry is never left counted in the depth.
    await guard(this.client, () =>
      webhookRead.run(
        this.client,
        [this.keys.webhookEvents(key), this.keys.webhookBytes(key)],
        [GROUP, '', 0, ids.join(' ')],
      ),
    );
  }

  async depth(key: ApiKey): Promise<number> {
    return guard(this.client, () => this.client.xlen(this.keys.webhookEvents(key)));
  }
}
