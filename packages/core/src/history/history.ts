import type { Publication } from '../broker/broker';
import type { Topic } from '../types';

export type { HistoryRetention, StreamPosition } from './position';
import type { StreamPosition } from './position';

/**
 * What one stored publication counts against `maxBytes`: its body's length plus
 * `ENTRY_OVERHEAD_BYTES` for its metadata. The Redis engine counts the exact length of the entry
 * it stores (the body and its metadata, which is about that much), so both engines keep the same
 * publications within a few dozen bytes per entry.
 */
export const ENTRY_OVERHEAD_BYTES = 64;

export interface HistoryQuery {
  /**
   * Publications with an offset above this one (ascending); absent: the latest `limit`. Callers
   * validate it; implementations read anything but a positive integer as 0.
   */
  readonly since?: number;
  /** At most this many publications (anything but a positive integer reads none). */
  readonly limit: number;
  /**
   * The retention TTL of the topic's key (how long its stream outlives its latest publication):
   * the bound by which an empty epoch is judged (`at`), and part of an empty epoch's stamp, so a
   * TTL changed since the read is never judged with the new one. Default (also for anything but
   * a positive integer): `HISTORY_TTL_SECONDS`.
   */
  readonly ttlSeconds?: number;
  /**
   * The epoch the caller holds (a client's resume `epoch`, a node's topic stream position). When
   * it is an empty epoch (empty-epochs.ts) the engine judges it: a topic still without history
   * reports that same empty epoch if nothing can have been published since it was read, and a
   * topic whose stream is the first one created since reports `follows: at`.
   */
  readonly at?: string;
}

/** `value` if it is a positive integer (at most 2^53), else 0: how implementations read `since` and `limit`. */
export function wholeOrZero(value: number): number {
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

export interface HistoryPage extends StreamPosition {
  /**
   * Ascending by offset, each carrying `offset` and `epoch`. With `since`: the stored
   * publications after it, at most `limit`; the range is complete when the first one's offset
   * is `since + 1` (or `since` equals `offset`), otherwise some were trimmed or expired.
   */
  readonly publications: readonly Publication[];
  /**
   * The query's empty epoch `at`, when this stream is the first one the topic got since that
   * empty epoch was read: offsets given in `at` are offsets of `epoch` (a client that read the
   * topic empty and resumes from `at` misses exactly the publications from offset 1).
   */
  readonly follows?: string;
}

/**
 * History: the streams of topics, read side. Publications enter a stream through
 * `Broker.publish(publication, retention)`, which assigns the offset atomically with storing and
 * fanning out (on Redis: one script in the topic's slot), so every node sees one order.
 *
 * Contract, for every implementation:
 * - `read` returns the topic's current position and the requested publications in ascending
 *   offset order. A topic without a stream (never published to, expired, lost) has offset 0 in
 *   an empty epoch (empty-epochs.ts), and the read stores nothing: a stranger reading random
 *   channel names costs no memory. The empty epoch is the one `at` holds when `at` is an empty
 *   epoch still valid (nothing can have been published since its read: same stamp, less than
 *   the TTL ago), else a new one. A topic with a stream reports its epoch, with `follows: at`
 *   when `at` is an empty epoch the stream is the first one created since (its creation less
 *   than the TTL after the read). Engines judge in their own clock.
 * - Only the last `size` publications are kept, of them only the latest that fit in `maxBytes`
 *   (the latest one always), and none once `ttlSeconds` passed since the topic's latest
 *   publication; then the whole stream is gone: the next publication starts at offset 1 in a new
 *   epoch (drawn afresh, never an empty one). Dropping the oldest keeps the stored range
 *   contiguous, so a read after `since` shows a trimmed range as incomplete (its first offset is
 *   above `since + 1`).
 * - Failures reject with `EngineUnavailableError`.
 */
export interface History {
  read(topic: Topic, query: HistoryQuery): Promise<HistoryPage>;
}
