import { countFamilyOf, topicId } from '@switchboard/core';
import type { Topic } from '@switchboard/core';
import type { ConnectionState, Subscription } from '../connections/connection';
import type { CountEventFrames } from '../protocols/dialect';
import { publishToChannel } from './events';
import type { EventDeps } from './events';
import { sendTo } from './send';
import type { Config } from '@switchboard/core';

/**
 * How often, at most, this node announces one channel's count: a change is announced at once
 * when the channel had no announcement from this node within the interval, else once at the
 * interval's end with the count read then (docs/pusher.md, "Subscription counts").
 */
export const COUNT_EVENT_INTERVAL_MS = 1000;

/** A channel this node announced within the interval. */
interface Announced {
  readonly topic: Topic;
  readonly frames: CountEventFrames;
  /** The count this node last announced (0: none was published, nobody left). */
  last: number | undefined;
  /** A change came since the interval's read started. */
  due: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** A subscriber that gets the count itself (not through the channel) right after its success answer. */
export interface CountJoiner {
  readonly state: ConnectionState;
  readonly sub: Subscription;
}

/**
 * Subscription count events (`Dialect.countEvents`, Pusher's `subscription_count`): after this
 * node's count write for a counted channel (`changed`), the channel's cluster-wide count is read
 * and published to the channel like any event, through the broker, so every node's subscribers
 * get it; a channel with nobody left hears nothing. Per channel this node publishes at most once
 * per `intervalMs`: a change on a channel it did not announce within the interval goes out at
 * once, changes within the interval are folded into one read at its end (one frame serialized
 * once for the whole channel), so thousands of subscribers joining cost one event per second
 * per gateway, not one per join.
 *
 * The read at the interval's end happens whether or not this node changed the count meanwhile,
 * and publishes only a count that differs from the one this node last announced: when several
 * nodes announce at the same instant, one's event may overtake another's fresher one, and this
 * corrects it within an interval. A channel whose read found nothing new is forgotten.
 *
 * A subscriber that joins while its channel's announcement waits gets the current count at once,
 * by itself (one more read), as Pusher gives a new subscriber the count right after
 * `subscription_succeeded`; when the announcement goes out at once it is already in the channel
 * and gets that one.
 *
 * Holds one entry and one timer per channel announced within the last interval, nothing else.
 */
export class CountEvents {
  private readonly announced = new Map<string, Announced>();
  private stopped = false;

  constructor(
    private readonly deps: EventDeps & { readonly config: Config },
    private readonly intervalMs = COUNT_EVENT_INTERVAL_MS,
  ) {}

  /**
   * `topic`'s count changed by this node's write `written` (a failed write announces nothing:
   * the repair rewrites the node's share); `joiner` is the subscriber whose join it was.
   */
  changed(topic: Topic, frames: CountEventFrames, written: Promise<void>, joiner?: CountJoiner): void {
    written.then(
      () => this.afterWrite(topic, frames, joiner),
      () => undefined,
    );
  }

  /** Stops every pending announcement (the gateway is closing). */
  stop(): void {
    this.stopped = true;
    for (const entry of this.announced.values()) clearTimeout(entry.timer);
    this.announced.clear();
  }

  private afterWrite(topic: Topic, frames: CountEventFrames, joiner: CountJoiner | undefined): void {
    if (this.stopped) return;
    const id = topicId(topic);
    const entry = this.announced.get(id);
    if (entry) {
      entry.due = true;
      if (joiner) void this.tellJoiner(topic, frames, joiner);
      return;
    }
    const fresh: Announced = { topic, frames, last: undefined, due: false, timer: undefined };
    this.announced.set(id, fresh);
    fresh.timer = this.schedule(id, fresh);
    void this.read(topic).then((count) => this.publishIfNew(id, fresh, count));
  }

  /** At the interval's end: read again, announce what changed, and watch one more interval if anything did. */
  private schedule(id: string, entry: Announced): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      entry.timer = undefined;
      entry.due = false;
      void this.read(entry.topic).then((count) => {
        const published = this.publishIfNew(id, entry, count);
        if (this.announced.get(id) !== entry) return;
        if (published || entry.due) entry.timer = this.schedule(id, entry);
        else this.announced.delete(id);
      });
    }, this.intervalMs);
    timer.unref?.();
    return timer;
  }

  /** Publishes `count` to the channel unless this node announced it last (or it is 0); true when published. */
  private publishIfNew(id: string, entry: Announced, count: number | undefined): boolean {
    if (count === undefined || this.stopped || this.announced.get(id) !== entry) return false;
    if (count === entry.last) return false;
    entry.last = count;
    if (count === 0) return false;
    void publishToChannel(this.deps, entry.topic, entry.frames.frame(entry.topic.channel, count), {
      stampable: false,
    });
    return true;
  }

  private async tellJoiner(
    topic: Topic,
    frames: CountEventFrames,
    { state, sub }: CountJoiner,
  ): Promise<void> {
    const count = await this.read(topic);
    if (count === undefined || count === 0 || state.closed || state.subs.get(sub.channel) !== sub) return;
    sendTo(this.deps, state, frames.frame(sub.channel, count));
  }

  /** The channel's cluster-wide count of its family; undefined when the engine did not answer. */
  private read(topic: Topic): Promise<number | undefined> {
    return this.deps.engine.counts
      .count(topic.key, topic.channel, countFamilyOf(topic.protocol))
      .catch((error: unknown) => {
        this.deps.logger.debug(
          { err: error, channel: topic.channel },
          'subscription count not read; not announced',
        );
        return undefined;
      });
  }
}
