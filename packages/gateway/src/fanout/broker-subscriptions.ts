import { topicId } from '@switchboard/core';
import type { Broker, Logger, Topic } from '@switchboard/core';

/**
 * Reference-counted broker subscriptions: the node is subscribed to a topic's cross-node channel
 * exactly while it has local subscribers (subscribe on the first, unsubscribe after the last).
 * The first subscriber's topic object is the one all of them share while they hold it.
 */
export class BrokerSubscriptions {
  private readonly counts = new Map<
    string,
    { topic: Topic; count: number; subscribing: Promise<void> | undefined }
  >();

  constructor(
    private readonly broker: Broker,
    private readonly logger: Logger,
  ) {}

  /**
   * Resolves once the broker subscription is in place (or failed: it is restored later), with
   * the shared copy of `topic`: subscriptions keep that one, not an object and strings each.
   */
  async acquire(topic: Topic): Promise<Topic> {
    const id = topicId(topic);
    const entry = this.counts.get(id);
    if (entry) {
      entry.count++;
      // A later subscriber waits for the first one's subscribe too: nothing published after
      // its `open` may be missed.
      if (entry.subscribing) await entry.subscribing;
      return entry.topic;
    }
    const created = { topic, count: 1, subscribing: undefined as Promise<void> | undefined };
    this.counts.set(id, created);
    created.subscribing = this.broker.subscribe(topic).catch((error: unknown) => {
      this.logger.warn(
        { err: error, topic },
        'broker subscribe failed; it is restored when the engine is back',
      );
    });
    await created.subscribing;
    created.subscribing = undefined;
    return topic;
  }

  /**
   * `acquire` when it needs no wait: the shared topic when the node already holds it and its
   * subscribe completed (counted like `acquire`), else `undefined` (then `acquire`).
   */
  acquireHeld(topic: Topic): Topic | undefined {
    const entry = this.counts.get(topicId(topic));
    if (!entry || entry.subscribing) return undefined;
    entry.count++;
    return entry.topic;
  }

  release(topic: Topic): void {
    const id = topicId(topic);
    const entry = this.counts.get(id);
    if (!entry) return;
    entry.count--;
    if (entry.count > 0) return;
    this.counts.delete(id);
    this.broker.unsubscribe(topic).catch((error: unknown) => {
      this.logger.warn({ err: error, topic }, 'broker unsubscribe failed');
    });
  }

  /** Subscribes every topic again (idempotent), after the engine came back. */
  async restore(): Promise<void> {
    await Promise.all([...this.counts.values()].map(({ topic }) => this.broker.subscribe(topic)));
  }

  has(topic: Topic): boolean {
    return this.counts.has(topicId(topic));
  }

  get size(): number {
    return this.counts.size;
  }
}
