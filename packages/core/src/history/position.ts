/**
 * A topic's position in its stream: the offset of its latest publication (0 before the first)
 * within an `epoch`, an opaque token that changes whenever the topic's history is lost (memory
 * engine restart, Redis data loss, history expiry). Offsets of one epoch are 1, 2, 3, … with no
 * gap; comparing offsets across epochs means nothing.
 */
export interface StreamPosition {
  readonly offset: number;
  readonly epoch: string;
}

/**
 * How much of a topic's stream is kept: the last `size` publications, and of those only the
 * latest that fit in `maxBytes`, until `ttlSeconds` after the latest.
 */
export interface HistoryRetention {
  /** 0 keeps offsets and epochs but stores nothing (nothing is ever recoverable). */
  readonly size: number;
  readonly ttlSeconds: number;
  /**
   * Bytes of stored publications the topic may hold (`HISTORY_MAX_BYTES_PER_CHANNEL`), each
   * counted as `storedBytes` says; past it the oldest are dropped. The latest publication is
   * always kept, whatever its size. Absent: no byte cap (only `size` bounds the stream).
   */
  readonly maxBytes?: number;
}
