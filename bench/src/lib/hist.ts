/**
 * Latency histogram in microseconds: 10 µs buckets up to 10 ms, 100 µs up to 100 ms, 1 ms up to
 * 10 s, one overflow bucket. Fixed size, so millions of samples cost no memory and merge cheaply.
 */
export const BUCKETS = 1000 + 900 + 9900 + 1;

export function bucketOf(us: number): number {
  if (us < 0) return 0;
  if (us < 10_000) return Math.floor(us / 10);
  if (us < 100_000) return 1000 + Math.floor((us - 10_000) / 100);
  if (us < 10_000_000) return 1900 + Math.floor((us - 100_000) / 1000);
  return BUCKETS - 1;
}

/** The upper edge of a bucket, in microseconds. */
export function bucketUpper(index: number): number {
  if (index < 1000) return (index + 1) * 10;
  if (index < 1900) return 10_000 + (index - 999) * 100;
  if (index < BUCKETS - 1) return 100_000 + (index - 1899) * 1000;
  return 10_000_000;
}

/** Sparse form for IPC: [index, count] pairs of the non-empty buckets. */
export type SparseHist = [number, number][];

export function toSparse(hist: Uint32Array): SparseHist {
  const out: SparseHist = [];
  for (let i = 0; i < hist.length; i++) if (hist[i]) out.push([i, hist[i]!]);
  return out;
}

export function mergeSparse(into: Float64Array, sparse: SparseHist): void {
  for (const [index, count] of sparse) into[index] = (into[index] ?? 0) + count;
}

export interface Percentiles {
  samples: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function percentiles(hist: Float64Array): Percentiles {
  let total = 0;
  for (const count of hist) total += count;
  const at = (q: number): number => {
    if (total === 0) return 0;
    const rank = Math.ceil(q * total);
    let seen = 0;
    for (let i = 0; i < hist.length; i++) {
      seen += hist[i]!;
      if (seen >= rank) return bucketUpper(i) / 1000;
    }
    return bucketUpper(hist.length - 1) / 1000;
  };
  let max = 0;
  for (let i = hist.length - 1; i >= 0; i--) {
    if (hist[i]) {
      max = bucketUpper(i) / 1000;
      break;
    }
  }
  return { samples: total, p50Ms: at(0.5), p95Ms: at(0.95), p99Ms: at(0.99), maxMs: max };
}
