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
  /** A change came after the announcement: another one is due at the interval's end. */
  due: boolean;
  timer: ReturnType<typeof setTimeout>;
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
 * per `intervalMs`: changes within the interval are coalesced into one announcement at its end
 * (one read, one frame serialized once for the whole channel), so thousands of subscribers
 * joining cost one event per second per gateway, not one per join.
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
    const fresh: Announced = { topic, frames, due: false, timer: this.schedule(id) };
    this.announced.set(id, fresh);
    void this.announce(fresh);
  }

  /** At the interval's end: announce again if a change came meanwhile (and wait another interval), else forget the channel. */
  private schedule(id: string): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      const entry = this.announced.get(id);
      if (!entry) return;
      if (!entry.due) {
        this.announced.delete(id);
        return;
      }
      entry.due = false;
      entry.timer = this.schedule(id);
      void this.announce(entry);
    }, this.intervalMs);
    timer.unref?.();
    return timer;
  }

  private async announce(entry: Announced): Promise<void> {
    const count = await this.read(entry.topic);
    if (count === undefined || count === 0 || this.stopped) return;
    await publishToChannel(this.deps, entry.topic, entry.frames.frame(entry.topic.channel, count), {
      stampable: false,
    });
  }

  private async tellJoiner(topic: Topic, frames: CountEventFrames, { state, sub }: CountJoiner): Promise<void> {
    const count = await this.read(topic);
    if (count === undefined || count === 0 || state.closed || state.subs.get(sub.channel) !== sub) return;
    sendTo(this.deps, state, frames.frame(sub.channel, count));
  }

  /** The channel's cluster-wide count of its family; undefined when the engine did not answer. */
  private read(topic: Topic): Promise<number | undefined> {
    return this.deps.engine.counts.count(topic.key, topic.channel, countFamilyOf(topic.protocol)).catch(
      (error: unknown) => {
        this.deps.logger.debug({ err: error, channel: topic.channel }, 'subscription count not read; not announced');
        return undefined;
      },
    );
  }
}
