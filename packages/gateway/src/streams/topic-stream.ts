import { isEmptyEpoch } from '@switchboard/core';
import type { HistoryPage, Publication, StreamPosition } from '@switchboard/core';

/** Where a subscription stands, as `system::position` tells it. */
export interface PositionReport extends StreamPosition {
  /** Absent when the subscription did not ask to resume (no `since`). */
  readonly recovered?: boolean;
  readonly missed: number;
}

/** What a topic stream needs from the node: history reads and delivery to its subscribers. */
export interface StreamOutlet {
  /**
   * One page of the topic's history after `since` (absent: the current position only), judged
   * against the epoch `at` the stream stands at (`HistoryQuery.at`).
   */
  read(since: number | undefined, at: string | undefined): Promise<HistoryPage>;
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
  /** When (`performance.now()`) the history read that gave `position` was sent. */
  readonly readAt: number;
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
 *
 * A topic without history stands at an empty epoch (offset 0, stored nowhere, a new one per read
 * unless the engine vouches for the one the reader holds: `HistoryQuery.at`). Leaving one loses
 * nothing, so it is never among the left epochs; its subscribers learn the first real epoch by a
 * `recovered: true` position at offset 0 before its first publication (docs/protocol.md, "A
 * channel without history").
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
  /** When (`performance.now()`) the read that found the topic empty was sent, while at an empty epoch. */
  private emptySince: number | undefined;
  /**
   * The current epoch was entered at offset 0 straight from an empty epoch the stream held since
   * this time, with nothing lost: a joiner whose read found the topic empty after it is at offset
   * 0 of the current epoch.
   */
  private continuedFrom: number | undefined;
  /** The epoch whose publication past its first one, at an empty epoch, last sent the stream to history. */
  private filledFor: string | undefined;
  /** When (`performance.now()`) the stream moved to its current epoch. */
  private enteredAt = 0;
  /** When the stream last lost its engine connection, and last delivered a publication. */
  private suspendedAt = -Infinity;
  private deliveredAt = -Infinity;
  private retry: NodeJS.Timeout | undefined;
  /** Opted-in subscriptions on this node, caught up or catching up. */
  subscribers = 0;

  /**
   * `ttlMs`: the topic's retention TTL. A joiner whose read found the topic empty is taken to
   * have read before the stream's current epoch started only when its read took less than half
   * of it (an epoch lives at least the TTL, so such a read cannot have come after it expired).
   */
  constructor(
    private readonly outlet: StreamOutlet,
    private readonly ttlMs = 120_000,
  ) {}

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
      this.emptySince = isEmptyEpoch(position.epoch) ? joiner.readAt : undefined;
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
    const empty = this.emptyJoiner(joiner);
    if (empty !== undefined) {
      if (empty === 'join') joiner.join();
      else this.joinFromRecent(joiner, 0);
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
    this.joinFromRecent(joiner, position.offset);
  }

  /**
   * Where a joiner that read the topic empty (another empty epoch than the stream's) stands, if
   * the stream can tell: `'join'` when the stream is at an empty epoch it held since before that
   * read (live, nothing was published since), offset 0 of the current epoch when the stream
   * went from such an empty epoch straight to it (the topic's first stream since the read).
   */
  private emptyJoiner(joiner: Joiner): 'join' | 0 | undefined {
    const { position, readAt } = joiner;
    if (position.epoch === this.epoch || position.offset !== 0 || !isEmptyEpoch(position.epoch))
      return undefined;
    if (this.emptySince !== undefined) {
      // Nothing reached the stream since it read the topic empty, or since the joiner did.
      const quiet = this.suspendedAt < readAt && this.deliveredAt < readAt;
      return readAt >= this.emptySince || quiet ? 'join' : undefined;
    }
    const beforeThisEpoch =
      this.continuedFrom !== undefined &&
      readAt >= this.continuedFrom &&
      readAt <= this.enteredAt &&
      performance.now() - readAt < this.ttlMs / 2;
    return beforeThisEpoch ? 0 : undefined;
  }

  /** Joins a subscriber of this epoch at `offset` (behind): what it lacks from `recent`, or `lost`. */
  private joinFromRecent(joiner: Joiner, offset: number): void {
    const behind = this.offset - offset;
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
    this.suspendedAt = performance.now();
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
      if (this.emptySince !== undefined && offset > 1 && this.filledFor !== epoch) {
        // Past the first publication of the stream that may follow this empty epoch: history
        // tells whether it does and holds what came before (once per epoch: no endless fills).
        this.filledFor = epoch;
        this.enqueue(publication);
        this.fill();
        return;
      }
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
    // An empty epoch has no publications: leaving it for a first one loses nothing, whatever
    // epochs the stream left before it (their later publications are dropped and said anyway).
    const fromEmpty = this.emptySince !== undefined;
    this.setPosition(epoch, offset - 1, offset === 1 && (fromEmpty || this.left.length === 0));
    this.deliver(publication, offset);
  }

  private deliver(publication: Publication, offset: number): void {
    this.offset = offset;
    this.deliveredAt = performance.now();
    this.recent.push(publication);
    if (this.recent.length > RECENT) this.recent.shift();
    this.outlet.deliver(publication);
    if (this.joiners.size > 0) this.settleJoiners();
  }

  /**
   * Jumps to a position, telling subscribers whether anything was lost on the way. `readAt`: when
   * the read that found the topic empty was sent, for a move to an empty epoch.
   */
  private setPosition(epoch: string, offset: number, recovered: boolean, readAt = performance.now()): void {
    const emptySince = this.emptySince;
    if (this.epoch !== undefined && epoch !== this.epoch && emptySince === undefined) {
      this.left.push(this.epoch);
      if (this.left.length > LEFT_EPOCHS) this.left.shift();
      this.returnAnnounced = false;
    }
    this.emptySince = isEmptyEpoch(epoch) ? readAt : undefined;
    this.continuedFrom =
      recovered && offset === 0 && emptySince !== undefined && epoch !== this.epoch ? emptySince : undefined;
    if (epoch !== this.epoch) this.enteredAt = performance.now();
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

  /**
   * Whether `page` is the topic's first stream since the empty epoch this stream stands at (the
   * engine vouches: `follows`): the stream moves to it at offset 0, nothing lost, and fills on.
   */
  private continues(page: HistoryPage): boolean {
    if (page.follows === undefined || page.follows !== this.epoch) return false;
    this.setPosition(page.epoch, 0, true);
    return true;
  }

  /** Joiners the stream has reached join; joiners it jumped past are told they lost some. */
  private settleJoiners(): void {
    for (const joiner of this.joiners) {
      const { position } = joiner;
      const sameEpoch = position.epoch === this.epoch;
      if (sameEpoch && position.offset > this.offset) continue;
      this.joiners.delete(joiner);
      const empty = this.emptyJoiner(joiner);
      if (empty === 'join') joiner.join();
      else if (empty === 0) this.joinFromRecent(joiner, 0);
      else if (sameEpoch) this.joinFromRecent(joiner, position.offset);
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
      let sent = performance.now();
      const page = await this.outlet.read(this.offset, this.epoch);
      if (this.hasLeft(page.epoch)) {
        this.leftEpochReturned();
        this.skipGap();
        return;
      }
      if (this.continues(page)) continue;
      if (page.epoch !== this.epoch || page.offset < this.offset) {
        // History was lost (a new epoch), or went back within one (Redis restored from an older
        // snapshot, offsets repeat): go on from the oldest publication it still holds.
        sent = performance.now();
        const fresh = await this.outlet.read(0, this.epoch);
        if (this.continues(fresh)) continue;
        if (this.hasLeft(fresh.epoch) || (fresh.epoch === this.epoch && page.epoch !== this.epoch)) {
          // Two masters answer in turn: follow neither back; the queue goes on in this epoch.
          if (this.hasLeft(fresh.epoch)) this.leftEpochReturned();
          this.skipGap();
          return;
        }
        const oldest = fresh.publications[0]?.offset ?? fresh.offset + 1;
        this.setPosition(fresh.epoch, oldest - 1, false, sent);
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
