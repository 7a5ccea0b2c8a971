import type { ApiKey } from '../types';
import type { QueuedEvent, WebhookEvent, WebhookQueue } from '../webhooks/webhooks';
import { guard } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';
import { WEBHOOK_STREAM_MAX, webhookLease } from './webhook-scripts';

/** The consumer group of every key's event stream. */
const GROUP = 'dispatch';

type StreamEntry = [id: string, fields: string[]];

function toQueued(entries: StreamEntry[]): QueuedEvent[] {
  const out: QueuedEvent[] = [];
  for (const [id, fields] of entries) {
    // An entry trimmed away while pending comes back without fields.
    const at = fields?.indexOf('e') ?? -1;
    const json = at >= 0 ? fields[at + 1] : undefined;
    if (json === undefined) continue;
    out.push({ id, storedAt: Number(id.split('-')[0]), event: JSON.parse(json) as WebhookEvent });
  }
  return out;
}

/**
 * Webhook events in one Redis stream per key (in the key's slot, written by the counts and
 * presence scripts), read through the consumer group `dispatch`: `next` first takes over every
 * pending entry (`XAUTOCLAIM` from 0, so a dead consumer's batch comes back whole), otherwise
 * reads new ones (`XREADGROUP >`). `ack` acknowledges and deletes, so `XLEN` is the depth.
 */
export class RedisWebhookQueue implements WebhookQueue {
  private readonly groups = new Set<ApiKey>();

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  async append(key: ApiKey, event: WebhookEvent): Promise<void> {
    await guard(this.client, () =>
      this.client.xadd(
        this.keys.webhookEvents(key),
        'MAXLEN',
        '~',
        WEBHOOK_STREAM_MAX,
        '*',
        'e',
        JSON.stringify(event),
      ),
    );
  }

  async lease(key: ApiKey, owner: string, ttlMs: number): Promise<boolean> {
    const held = await guard(this.client, () =>
      webhookLease.run(this.client, [this.keys.webhookLease(key)], [owner, Math.max(1, Math.round(ttlMs))]),
    );
    return held === 1;
  }

  async next(key: ApiKey, consumer: string, max: number): Promise<QueuedEvent[]> {
    const stream = this.keys.webhookEvents(key);
    try {
      return await this.read(key, stream, consumer, max);
    } catch (error) {
      // The stream may have been deleted with its group (a deleted key, a flushed Redis): the
      // group is created again once the stream exists again.
      this.groups.delete(key);
      throw error;
    }
  }

  private async read(key: ApiKey, stream: string, consumer: string, max: number): Promise<QueuedEvent[]> {
    if (!(await this.ensureGroup(key, stream))) return [];
    let claimed = await this.claim(stream, consumer, max);
    if (claimed === null) {
      // The stream went with its group since this process made it (a deleted key, a flushed Redis).
      this.groups.delete(key);
      if (!(await this.ensureGroup(key, stream))) return [];
      claimed = await this.claim(stream, consumer, max);
      if (claimed === null) return [];
    }
    const pending = toQueued(claimed[1] ?? []);
    const gone = (claimed[1] ?? []).length - pending.length + (claimed[2]?.length ?? 0);
    if (gone > 0) {
      // Trimmed while pending: nothing left to deliver for those ids.
      const ids = [...(claimed[2] ?? []), ...(claimed[1] ?? []).map(([id]) => id)].filter(
        (id) => !pending.some((e) => e.id === id),
      );
      if (ids.length > 0) await guard(this.client, () => this.client.xack(stream, GROUP, ...ids));
    }
    if (pending.length > 0) return pending;
    const read = (await guard(this.client, () =>
      this.client.xreadgroup('GROUP', GROUP, consumer, 'COUNT', max, 'STREAMS', stream, '>'),
    )) as Array<[string, StreamEntry[]]> | null;
    return toQueued(read?.[0]?.[1] ?? []);
  }

  /** Takes over every pending entry of the group; null when the group (or stream) is gone. */
  private async claim(
    stream: string,
    consumer: string,
    max: number,
  ): Promise<[string, StreamEntry[], string[]?] | null> {
    return (await guard(this.client, () =>
      this.client
        .call('XAUTOCLAIM', stream, GROUP, consumer, 0, '0-0', 'COUNT', max)
        .catch((error: unknown) => {
          if (error instanceof Error && error.message.includes('NOGROUP')) return null;
          throw error;
        }),
    )) as [string, StreamEntry[], string[]?] | null;
  }

  async ack(key: ApiKey, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const stream = this.keys.webhookEvents(key);
    // One transaction (one slot), so an acknowledged entry is never left counted in the depth.
    await guard(this.client, () =>
      this.client
        .multi()
        .xack(stream, GROUP, ...ids)
        .xdel(stream, ...ids)
        .exec(),
    );
  }

  async depth(key: ApiKey): Promise<number> {
    return guard(this.client, () => this.client.xlen(this.keys.webhookEvents(key)));
  }

  /**
   * Creates the group on the stream once; false while the stream does not exist (no event was
   * ever stored, or the key was deleted with its stream): then there is nothing to read, and not
   * creating an empty stream (no `MKSTREAM`) is what keeps a deleted key's dispatcher, until it
   * notices the deletion, from leaving a stream and group behind. The group starts at `0`, so a
   * stream created later by the scripts' `XADD` is read from its first entry.
   */
  private async ensureGroup(key: ApiKey, stream: string): Promise<boolean> {
    if (this.groups.has(key)) return true;
    const created = await guard(this.client, () =>
      this.client.xgroup('CREATE', stream, GROUP, '0').then(
        () => true,
        (error: unknown) => {
          if (error instanceof Error && error.message.includes('BUSYGROUP')) return true;
          if (error instanceof Error && error.message.includes('requires the key to exist')) return false;
          throw error;
        },
      ),
    );
    if (created) this.groups.add(key);
    return created;
  }
}
