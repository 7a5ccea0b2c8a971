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
   * How long the stream this read starts is kept when the topic has none (never published to,
   * or its history was lost): pass the key's retention so the epoch reported here is the one the
   * next publication carries. Default (also for anything but a positive integer):
   * `HISTORY_TTL_SECONDS`.
   */
  readonly ttlSeconds?: number;
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
}

/**
 * History: the streams of topics, read side. Publications enter a stream through
 * `Broker.publish(publication, retention)`, which assigns the offset atomically with storing and
 * fanning out (on Redis: one script in the topic's slot), so every node sees one order.
 *
 * Contract, for every implementation:
 * - `read` returns the topic's current position and the requested publications in ascending
 *   offset order; a topic never published to (or whose history was lost) has offset 0 and a
 *   fresh epoch, and the epoch it reports is the one its next publication will carry.
 * - Only the last `size` publications are kept, of them only the latest that fit in `maxBytes`
 *   (the latest one always), and none once `ttlSeconds` passed since the topic's latest
 *   publication; then the whole stream is gone: the next publication starts at offset 1 in a new
 *   epoch. Dropping the oldest keeps the stored range contiguous, so a read after `since` shows
 *   a trimmed range as incomplete (its first offset is above `since + 1`).
 * - A read of a topic without a stream starts one: its epoch at offset 0, no publications, kept
 *   for the query's `ttlSeconds`. It stores no publication (the byte budget is the publications'),
 *   and it must: an epoch stored nowhere differs on every read, so each read would look like lost
 *   history to a node's topic stream (an endless `recovered: false` after Redis restarted empty),
 *   and the first publication would start an epoch no subscriber read.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface History {
  read(topic: Topic, query: HistoryQuery): Promise<HistoryPage>;
}
