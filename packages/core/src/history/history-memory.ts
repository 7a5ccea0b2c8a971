import type { Publication } from '../broker/broker';
import { topicId } from '../types';
import type { Topic } from '../types';
import { randomBytes } from 'node:crypto';
import { newEpoch } from './epochs';
import { emptyEpoch, judgeEmptyEpoch, stampOf } from './empty-epochs';
import { ENTRY_OVERHEAD_BYTES, wholeOrZero } from './history';
import type { History, HistoryPage, HistoryQuery, HistoryRetention, StreamPosition } from './history';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

interface Stream {
  epoch: string;
  offset: number;
  /** Clock time (ms) of its first publication (empty epochs are judged by it). */
  createdAt: number;
  /** Clock time (ms) at which the whole stream is gone. */
  expiresAt: number;
  /** The last `ring.length` publications: offset `n` lives at `ring[n % ring.length]`. */
  ring: Publication[];
  /** How many of the latest offsets the ring holds (at most `ring.length`). */
  kept: number;
  /** What the kept publications count against `maxBytes` (`entryBytes` each). */
  bytes: number;
}

const entryBytes = (p: Publication): number => p.body.length + ENTRY_OVERHEAD_BYTES;

export interface MemoryHistoryOptions {
  /** Clock in ms (tests inject one to expire streams without waiting). */
  now?: () => number;
  /** The TTL empty epochs are judged by when a read names none (`HISTORY_TTL_SECONDS`). */
  defaultTtlSeconds?: number;
}

/** Idle streams are dropped by a sweep at most this often, run by the next publish or read. */
const SWEEP_INTERVAL_MS = 5_000;

/**
 * The memory engine's streams: per topic a ring buffer of its last `size` publications, shared by
 * every memory broker of one bus, so several nodes in one process see one stream. Offsets are
 * assigned synchronously in `append`, hence in call order. A stream expires `ttlSeconds` after its
 * latest publication (checked on access, and by a sweep so idle topics free their memory); the
 * next publication then starts a new epoch, as does a new instance (an engine restart). Reads
 * store nothing: a topic without a stream reports an empty epoch (empty-epochs.ts) stamped with
 * this instance, so none survives a restart.
 */
export class MemoryHistory implements History {
  private readonly streams = new Map<string, Stream>();
  private readonly now: () => number;
  private readonly defaultTtlMs: number;
  /** Names this instance in its empty epochs' stamps. */
  private readonly instance = randomBytes(9).toString('base64url');
  private nextSweep: number;
  /** Called with the bytes of publications dropped for a topic's `maxBytes` (for metrics). */
  readonly trimListeners: Array<(bytes: number) => void> = [];

  constructor(options: MemoryHistoryOptions = {}) {
    this.now = options.now ?? Date.now;
    this.defaultTtlMs = (options.defaultTtlSeconds ?? 120) * 1000;
    this.nextSweep = this.now() + SWEEP_INTERVAL_MS;
  }

  /** Assigns `publication` the topic's next offset, stores it, and returns it carrying its position. */
  append(publication: Publication, retention: HistoryRetention): Publication & StreamPosition {
    const now = this.now();
    const stream = this.live(publication.topic, now) ?? this.start(publication.topic, now);
    const size = retention.size;
    if (stream.ring.length !== size) resize(stream, size);
    const stamped: Mutable<Publication> & StreamPosition = {
      ...publication,
      offset: stream.offset + 1,
      epoch: stream.epoch,
    };
    stream.offset = stamped.offset;
    stream.expiresAt = now + retention.ttlSeconds * 1000;
    if (size > 0) {
      const slot = stamped.offset % size;
      if (stream.kept === size) stream.bytes -= entryBytes(stream.ring[slot] as Publication);
      stream.ring[slot] = stamped;
      if (stream.kept < size) stream.kept += 1;
      stream.bytes += entryBytes(stamped);
      if (retention.maxBytes !== undefined && stream.bytes > retention.maxBytes)
        this.trimBytes(stream, retention.maxBytes);
    }
    return stamped;
  }

  /** Drops the oldest kept publications until the rest fit in `maxBytes` (the latest stays). */
  private trimBytes(stream: Stream, maxBytes: number): void {
    let dropped = 0;
    while (stream.bytes > maxBytes && stream.kept > 1) {
      const oldest = stream.offset - stream.kept + 1;
      const slot = oldest % stream.ring.length;
      const bytes = entryBytes(stream.ring[slot] as Publication);
      stream.ring[slot] = undefined as unknown as Publication;
      stream.kept -= 1;
      stream.bytes -= bytes;
      dropped += bytes;
    }
    if (dropped > 0) for (const listener of this.trimListeners) listener(dropped);
  }

  async read(topic: Topic, query: HistoryQuery): Promise<HistoryPage> {
    // Stores nothing: a topic without a stream reports an empty epoch (history.ts).
    const now = this.now();
    const ttlMs = wholeOrZero(query.ttlSeconds ?? 0) * 1000 || this.defaultTtlMs;
    const stamp = stampOf(`${this.instance}|${ttlMs}`);
    const stream = this.live(topic, now);
    if (!stream) {
      const same = judgeEmptyEpoch(query.at, stamp, now, ttlMs, undefined) === 'same';
      return { offset: 0, epoch: same ? query.at! : emptyEpoch(stamp, now), publications: [] };
    }
    const { offset, epoch, ring, kept } = stream;
    const oldest = offset - kept + 1;
    const limit = wholeOrZero(query.limit);
    const from =
      query.since !== undefined
        ? Math.max(wholeOrZero(query.since) + 1, oldest)
        : Math.max(offset - limit + 1, oldest);
    const to = Math.min(offset, from + limit - 1);
    const publications: Publication[] = [];
    for (let n = from; n <= to; n++) publications.push(ring[n % ring.length] as Publication);
    const follows = judgeEmptyEpoch(query.at, stamp, now, ttlMs, stream.createdAt) === 'follows';
    return follows ? { offset, epoch, publications, follows: query.at! } : { offset, epoch, publications };
  }

  /** Whether a stream is held for `topic` (an expired one included until accessed or swept), for tests. */
  holds(topic: Topic): boolean {
    return this.streams.has(topicId(topic));
  }

  /** Number of streams held (expired ones included until swept), for tests. */
  get streamCount(): number {
    return this.streams.size;
  }

  /** The topic's stream unless it has none or it expired (an expired one is dropped now). */
  private live(topic: Topic, now: number): Stream | undefined {
    if (now >= this.nextSweep) this.sweep(now);
    const id = topicId(topic);
    const stream = this.streams.get(id);
    if (!stream || stream.expiresAt > now) return stream;
    this.streams.delete(id);
    return undefined;
  }

  /** A new stream for the topic (offset 0, fresh epoch), replacing an expired one; `append` stamps its expiry. */
  private start(topic: Topic, now: number): Stream {
    const stream: Stream = {
      epoch: newEpoch(),
      offset: 0,
      createdAt: now,
      expiresAt: now,
      ring: [],
      kept: 0,
      bytes: 0,
    };
    this.streams.set(topicId(topic), stream);
    return stream;
  }

  private sweep(now: number): void {
    this.nextSweep = now + SWEEP_INTERVAL_MS;
    for (const [id, stream] of this.streams) if (stream.expiresAt <= now) this.streams.delete(id);
  }
}

/** Gives the ring `size` slots, keeping the latest publications that fit. */
function resize(stream: Stream, size: number): void {
  const kept = Math.min(stream.kept, size);
  const ring: Publication[] = new Array<Publication>(size);
  let bytes = 0;
  for (let n = stream.offset - kept + 1; n <= stream.offset; n++) {
    const publication = stream.ring[n % stream.ring.length] as Publication;
    ring[n % size] = publication;
    bytes += entryBytes(publication);
  }
  stream.ring = ring;
  stream.kept = kept;
  stream.bytes = bytes;
}
