import type { HistoryPage, Publication, StreamPosition } from '@switchboard/core';

/** Where a subscription stands, as `system::position` tells it. */
export interface PositionReport extends StreamPosition {
  /** Absent when the subscription did not ask to resume (no `since`). */
  readonly recovered?: boolean;
  readonly missed: number;
}

/** What a topic stream needs from the node: history reads and delivery to its subscribers. */
export interface StreamOutlet {
  /** One page of the topic's history after `since` (absent: the current position only). */
  read(since: number | undefined): Promise<HistoryPage>;
  /** An in-order publication, to every caught-up subscriber of the topic on this node. */
  deliver(publication: Publication): void;
  /** A new position, to every caught-up subscriber (after lost publications or a new epoch). */
  announce(report: PositionReport): void;
  /** A history read failed; the stream retries by itself. */
  readFailed(error: unknown): void;
}

/** A subscription that has every publication up to `position` and now goes live. */
export interface Joiner {
  readonly position: StreamPosition;
  /** A publication this node delivered before the subscriber joined, sent to it alone. */
  send(publication: Publication): void;
  /** The subscriber cannot go on without a gap: it gets `recovered: false` and this position. */
  lost(report: PositionReport): void;
  /** Puts the subscriber among the caught-up ones; it is called in the same turn as the last `send`. */
  join(): void;
}

/** Publications a stream remembers after delivering them, for joiners that are a little behind. */
const RECENT = 256;
/** Publications held while the position is unknown or a gap is being filled. */
const QUEUE_LIMIT = 10_000;
const RETRY_MS = 1000;
/** Epochs a stream remembers having left (two masters for a moment interleave two or three). */
const LEFT_EPOCHS = 8;

/**
 * One topic's stream on this node: puts the publications the broker hands over (at most once,
 * possibly after a Redis reconnect lost some) into offset order with no gap and no duplicate.
 * A gap is filled from history; when history cannot fill it (trimmed, expired, lost), the
 * subscribers are told with a `recovered: false` position and the stream goes on from there.
 *
 * The stream exists while this node has opted-in subscriptions to the topic. Its position is
 * unknown until the first subscription's history read tells it; publications received before
 * that are queued, so none published after the broker subscription is lost.
 *
 * A stream never goes back to an epoch it has left (docs/architecture.md, "Failover: no position
 * is given twice"): while two masters serve for a moment, publications and history reads of both
 * epochs interleave, and going back would deliver that epoch's publications a second time. What
 * carries a left epoch is unrecoverable: dropped, and said once with `recovered: false`.
 */
export class TopicStream {
  private epoch: string | undefined;
  private offset = 0;
  private filling = false;
  /** The engine connection was lost: pub/sub may have dropped publications, unknown which. */
  private suspended = false;
  /** A resync came while a fill was under way: that fill may predate the loss, so fill again. */
  private refill = false;
  private queue: Publication[] = [];
  private readonly recent: Publication[] = [];
  private readonly joiners = new Set<Joiner>();
  /** The last epochs the stream moved away from, oldest first (at most `LEFT_EPOCHS`). */
  private readonly left: string[] = [];
  /** A left epoch came back while in this one, and subscribers were told `recovered: false`. */
  private returnAnnounced = false;
  private retry: NodeJS.Timeout | undefined;
  /** Opted-in subscriptions on this node, caught up or catching up. */
  subscribers = 0;

  constructor(private readonly outlet: StreamOutlet) {}

  get position(): StreamPosition | undefined {
    return this.epoch === undefined ? undefined : { epoch: this.epoch, offset: this.offset };
  }

  /** Whether the stream moved away from `epoch`: nothing of it is delivered or resumed again. */
  hasLeft(epoch: string): boolean {
    return this.left.includes(epoch);
  }

  /** A publication of the topic, as the broker delivered it (stream publications only). */
  receive(publication: Publication): void {
    if (this.epoch === undefined || this.filling || this.suspended) {
      this.enqueue(publication);
      return;
    }
    this.process(publication);
  }

  /**
   * Takes over a subscriber that has read history up to `joiner.position`: it gets what this
   * node delivered after that position, then joins; or waits until the stream reaches it.
   */
  handOver(joiner: Joiner): void {
    const { position } = joiner;
    if (this.epoch === undefined) {
      this.epoch = position.epoch;
      this.offset = position.offset;
      joiner.join();
      this.replayQueue();
      return;
    }
    if (this.hasLeft(position.epoch)) {
      // It read an epoch this stream left (two masters for a moment): it goes on from here.
      joiner.lost({ epoch: this.epoch, offset: this.offset, recovered: false, missed: 0 });
      joiner.join();
      return;
    }
    if (position.epoch !== this.epoch) {
      // The subscriber read a newer epoch than this node has seen (or an older one): history
      // decides; the joiner settles when the fill is done.
      this.joiners.add(joiner);
      if (this.filling) this.refill = true;
      else if (!this.suspended) this.fill();
      return;
    }
    if (position.offset > this.offset) {
      this.joiners.add(joiner);
      return;
    }
    this.joinFromRecent(joiner);
  }

  /** Joins a subscriber of this epoch that is behind: what it lacks from `recent`, or `lost`. */
  private joinFromRecent(joiner: Joiner): void {
    const behind = this.offset - joiner.position.offset;
    const first = this.recent.length - behind;
    if (first < 0) {
      joiner.lost({ epoch: this.epoch!, offset: this.offset, recovered: false, missed: 0 });
    } else {
      for (let i = first; i < this.recent.length; i++) joiner.send(this.recent[i]!);
    }
    joiner.join();
  }

  /** A joiner whose subscription ended before it caught up. */
  forget(joiner: Joiner): void {
    this.joiners.delete(joiner);
  }

  /**
   * The connection to the engine is lost: publications may be lost with it. Until `resync` has
   * compared with history, what arrives is held, so nothing is taken for complete on trust (a
   * new epoch's first publication would otherwise announce `recovered: true` over the loss).
   */
  suspend(): void {
    this.suspended = true;
  }

  /** After a broker reconnect: publications may have been lost; compare with history. */
  resync(): void {
    this.suspended = false;
    // Without a position yet, the queue waits for the first subscriber's (read after this).
    if (this.epoch === undefined) return;
    if (this.filling) this.refill = true;
    else this.fill();
  }

  close(): void {
    clearTimeout(this.retry);
    this.joiners.clear();
    this.queue = [];
  }

  private process(publication: Publication): void {
    const { offset, epoch } = publication;
    if (offset === undefined || epoch === undefined) return;
    if (this.hasLeft(epoch)) {
      this.leftEpochReturned();
      return;
    }
    if (epoch !== this.epoch) {
      this.newEpoch(publication, offset, epoch);
      return;
    }
    if (offset <= this.offset) return;
    if (offset === this.offset + 1) {
      this.deliver(publication, offset);
      return;
    }
    this.enqueue(publication);
    this.fill();
  }

  /**
   * The topic's history was lost (expired, Redis data loss). A first publication of the new
   * epoch right after everything of the old one was delivered loses nothing: subscribers only
   * learn the new epoch. Anything else may have lost publications, and so may any change after
   * the stream already left an epoch: that one may still be served (two masters for a moment),
   * and what it publishes after this switch is never delivered.
   */
  private newEpoch(publication: Publication, offset: number, epoch: string): void {
    this.setPosition(epoch, offset - 1, offset === 1 && this.left.length === 0);
    this.deliver(publication, offset);
  }

  private deliver(publication: Publication, offset: number): void {
    this.offset = offset;
    this.recent.push(publication);
    if (this.recent.length > RECENT) this.recent.shift();
    this.outlet.deliver(publication);
    if (this.joiners.size > 0) this.settleJoiners();
  }

  /** Jumps to a position, telling subscribers whether anything was lost on the way. */
  private setPosition(epoch: string, offset: number, recovered: boolean): void {
    if (this.epoch !== undefined && epoch !== this.epoch) {
      this.left.push(this.epoch);
      if (this.left.length > LEFT_EPOCHS) this.left.shift();
      this.returnAnnounced = false;
    }
    this.epoch = epoch;
    this.offset = offset;
    this.recent.length = 0;
    this.outlet.announce({ epoch, offset, recovered, missed: 0 });
    if (this.joiners.size > 0) this.settleJoiners();
  }

  /**
   * A publication or a history read of an epoch this stream left: its publications after the
   * switch are never delivered, so subscribers are told once, at the current position.
   */
  private leftEpochReturned(): void {
    if (this.returnAnnounced) return;
    this.returnAnnounced = true;
    this.outlet.announce({ epoch: this.epoch!, offset: this.offset, recovered: false, missed: 0 });
  }

  /**
   * History serves another epoch than this stream's (a left one, or it alternates between two
   * masters): the gap before the publications queued for this epoch cannot be filled, so the
   * stream goes on from the first of them with `recovered: false`.
   */
  private skipGap(): void {
    let next: number | undefined;
    for (const { epoch, offset } of this.queue)
      if (epoch === this.epoch && offset !== undefined && offset > this.offset)
        next = next === undefined ? offset : Math.min(next, offset);
    if (next !== undefined && next > this.offset + 1) this.setPosition(this.epoch!, next - 1, false);
  }

  /** Joiners the stream has reached join; joiners it jumped past are told they lost some. */
  private settleJoiners(): void {
    for (const joiner of this.joiners) {
      const { position } = joiner;
      const sameEpoch = position.epoch === this.epoch;
      if (sameEpoch && position.offset > this.offset) continue;
      this.joiners.delete(joiner);
      if (sameEpoch) this.joinFromRecent(joiner);
      else {
        joiner.lost({ epoch: this.epoch!, offset: this.offset, recovered: false, missed: 0 });
        joiner.join();
      }
    }
  }

  private enqueue(publication: Publication): void {
    this.queue.push(publication);
    // Dropping the oldest is safe: the gap it leaves is filled from history.
    if (this.queue.length > QUEUE_LIMIT) this.queue.shift();
  }

  private replayQueue(): void {
    const queued = this.queue;
    this.queue = [];
    for (let i = 0; i < queued.length; i++) {
      if (this.filling || this.suspended) {
        this.queue.push(...queued.slice(i));
        return;
      }
      this.process(queued[i]!);
    }
  }

  /** Reads history after the last delivered offset until the stream is level with it. */
  private fill(): void {
    this.filling = true;
    void this.fillFromHistory().then(
      () => {
        this.filling = false;
        if (this.refill) {
          this.refill = false;
          this.fill();
          return;
        }
        if (this.joiners.size > 0) this.settleJoiners();
        this.replayQueue();
      },
      (error: unknown) => {
        this.outlet.readFailed(error);
        clearTimeout(this.retry);
        this.retry = setTimeout(() => this.fill(), RETRY_MS);
        this.retry.unref();
      },
    );
  }

  private async fillFromHistory(): Promise<void> {
    for (;;) {
      const page = await this.outlet.read(this.offset);
      if (this.hasLeft(page.epoch)) {
        this.leftEpochReturned();
        this.skipGap();
        return;
      }
      if (page.epoch !== this.epoch || page.offset < this.offset) {
        // History was lost (a new epoch), or went back within one (Redis restored from an older
        // snapshot, offsets repeat): go on from the oldest publication it still holds.
        const fresh = await this.outlet.read(0);
        if (this.hasLeft(fresh.epoch) || (fresh.epoch === this.epoch && page.epoch !== this.epoch)) {
          // Two masters answer in turn: follow neither back; the queue goes on in this epoch.
          if (this.hasLeft(fresh.epoch)) this.leftEpochReturned();
          this.skipGap();
          return;
        }
        const oldest = fresh.publications[0]?.offset ?? fresh.offset + 1;
        this.setPosition(fresh.epoch, oldest - 1, false);
        continue;
      }
      const first = page.publications[0]?.offset;
      if (first === undefined) {
        if (page.offset > this.offset) this.setPosition(page.epoch, page.offset, false);
        return;
      }
      if (first > this.offset + 1) this.setPosition(page.epoch, first - 1, false);
      const before = this.offset;
      for (const publication of page.publications) {
        if (publication.offset !== undefined && publication.offset === this.offset + 1)
          this.deliver(publication, publication.offset);
      }
      if (this.offset >= page.offset) return;
      if (this.offset === before) {
        this.setPosition(page.epoch, page.offset, false);
        return;
      }
    }
  }
}
