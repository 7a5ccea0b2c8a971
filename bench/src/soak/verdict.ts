/**
 * The soak run's verdicts, on measurements given as data (bench/test/soak-verdict.test.ts pins
 * them). See docs/reliability.md, "Soak run".
 */

/** One reading of one gateway, every sample interval. */
export interface NodeSample {
  /** Seconds since the load started. */
  t: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** `switchboard_heap_used_after_gc_bytes`: the heap the latest full collection left (0 before one, or from a product without it). */
  heapAfterGcBytes: number;
  /**
   * Event-loop lag (ms) since the previous reading: the worst of the scrapes in between (prom-client
   * resets its histogram at each scrape).
   */
  lagP99Ms: number;
  lagMaxMs: number;
  lagMeanMs: number;
  /** `switchboard_connections`, both protocols. */
  connections: number;
  cpuSeconds: number;
}

export interface HeapVerdict {
  ok: boolean;
  /** What the gateway kept, in the window after warm-up and in the last window, bytes (see `heapVerdict`). */
  baselineBytes: number;
  finalBytes: number;
  /** finalBytes / baselineBytes − 1. */
  growth: number;
  /** Which statistic: the median heap after full collections, or (a product without that gauge) the lowest used heap. */
  basis: 'after-gc' | 'lowest-used';
  /** The lowest reading of each bucket after warm-up, in time order (plotted). */
  floors: { t: number; bytes: number }[];
  why?: string;
}

export interface HeapRule {
  /** Seconds from the start that are not judged (ramp-up, JIT, first GCs). */
  warmupS: number;
  /** Length of the baseline window (right after warm-up) and of the final window (the end). */
  windowS: number;
  /** Width of a bucket whose minimum is plotted as the heap's floor. */
  bucketS: number;
  /** Largest allowed growth, 0.10 for 10 %. */
  maxGrowth: number;
}

/** Warm-up, windows and buckets for a run of `durationS`: a fifth each, buckets of a tenth (at most a minute). */
export function heapRule(durationS: number, maxGrowth = 0.1): HeapRule {
  const windowS = Math.max(durationS / 5, 1);
  return { warmupS: windowS, windowS, bucketS: Math.min(60, Math.max(durationS / 10, 1)), maxGrowth };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * Heap growth after warm-up, judged on what the gateway keeps rather than on single readings of
 * used heap, a sawtooth (it climbs between collections and drops at each) that mostly says where
 * the collector is in its cycle. No collection is forced: the gateway runs as in production.
 *
 * - With `switchboard_heap_used_after_gc_bytes` (the heap the latest full collection left): the
 *   median of its readings in the window after warm-up (baseline) and in the last window (final).
 *   A leak raises it after every collection; the median ignores one unusual collection.
 * - Without it (a product from before the gauge): the lowest used-heap reading of each window.
 *   The heap never reads below what is live, so that is the closest reading to a collection's
 *   leftovers; a high reading moves neither figure. Noisier: a window's lowest reading depends on
 *   how close to a collection a sample fell.
 *
 * `floors` (the lowest reading per bucket) are for the plot.
 */
export function heapVerdict(
  samples: { t: number; heapUsedBytes: number; heapAfterGcBytes?: number }[],
  endS: number,
  rule: HeapRule,
): HeapVerdict {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.t < rule.warmupS) continue;
    const b = Math.floor((s.t - rule.warmupS) / rule.bucketS);
    buckets.set(b, Math.min(buckets.get(b) ?? Infinity, s.heapUsedBytes));
  }
  const floors = [...buckets.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([b, bytes]) => ({ t: rule.warmupS + b * rule.bucketS, bytes }));
  const inBaseline = samples.filter((s) => s.t >= rule.warmupS && s.t < rule.warmupS + rule.windowS);
  const inFinal = samples.filter((s) => s.t > endS - rule.windowS && s.t <= endS);
  const afterGc = (window: typeof samples): number[] =>
    window.map((s) => s.heapAfterGcBytes ?? 0).filter((bytes) => bytes > 0);
  const basis = afterGc(inBaseline).length && afterGc(inFinal).length ? 'after-gc' : 'lowest-used';
  if (inBaseline.length === 0 || inFinal.length === 0 || endS - rule.windowS < rule.warmupS + rule.windowS) {
    return {
      ok: false,
      baselineBytes: 0,
      finalBytes: 0,
      growth: 0,
      basis,
      floors,
      why: `too short to judge: needs samples after the ${rule.warmupS} s warm-up, a ${rule.windowS} s baseline window and a final window after it`,
    };
  }
  const figure = (window: typeof samples): number =>
    basis === 'after-gc' ? median(afterGc(window)) : Math.min(...window.map((s) => s.heapUsedBytes));
  const baselineBytes = figure(inBaseline);
  const finalBytes = figure(inFinal);
  const growth = finalBytes / baselineBytes - 1;
  const ok = growth <= rule.maxGrowth;
  return {
    ok,
    baselineBytes,
    finalBytes,
    growth,
    basis,
    floors,
    ...(ok
      ? {}
      : {
          why: `heap after collections grew ${(growth * 100).toFixed(1)} % (more than ${(rule.maxGrowth * 100).toFixed(0)} %)`,
        }),
  };
}

/** What a checkpoint compares: the load generator's sockets against what the cluster reports. */
export interface CountsView {
  /** `<key>|<channel>` → connections (V3 and V4 together, as `ConnectionCounts` counts them). */
  channels: Record<string, number>;
  /** key → `ConnectionCounts.sum`. */
  sums: Record<string, number>;
  /** `<key>|<protocol>|<channel>` → presence: V3 entries, V4 distinct identities. */
  presence: Record<string, number>;
  /** Per gateway: `switchboard_connections`. */
  nodes: number[];
}

/** Every difference between what the sockets imply and what the cluster reports (zeros omitted on both sides). */
export function countsDrift(expected: CountsView, actual: CountsView): string[] {
  const problems: string[] = [];
  const compare = (what: string, a: Record<string, number>, b: Record<string, number>): void => {
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const want = a[name] ?? 0;
      const got = b[name] ?? 0;
      if (want !== got) problems.push(`${what} ${name}: expected ${want}, reported ${got}`);
    }
  };
  compare('sum', expected.sums, actual.sums);
  compare('channel', expected.channels, actual.channels);
  compare('presence', expected.presence, actual.presence);
  expected.nodes.forEach((want, i) => {
    const got = actual.nodes[i] ?? 0;
    if (want !== got)
      problems.push(`node ${i + 1} switchboard_connections: expected ${want}, reported ${got}`);
  });
  return problems;
}

export interface CheckpointResult {
  t: number;
  /** Sockets the load generator held open. */
  open: number;
  /** Milliseconds until the cluster agreed (after churn paused), or undefined when it never did. */
  settledMs?: number;
  /** The differences at the deadline, when it never agreed (at most 20). */
  drift: string[];
}

export interface SoakVerdict {
  ok: boolean;
  reasons: string[];
}

/** The run's verdict: heap growth per node, drift at any checkpoint, and what the sockets saw. */
export function soakVerdict(input: {
  heap: HeapVerdict[];
  checkpoints: CheckpointResult[];
  /** Keys the cluster still held after every socket closed. */
  leftovers: string[];
  /** Closes the run did not cause (neither a client close nor a kick), by code. */
  unexpectedCloses: Record<string, number>;
  wrongKicks: number;
  missedKicks: number;
  /** Sockets that never opened, and every open attempt, after warm-up. */
  failedOpens: number;
  opens: number;
  /** Largest share of failed opens tolerated (timeouts on a loaded machine), 0.001 for 0.1 %. */
  maxFailedShare: number;
}): SoakVerdict {
  const reasons: string[] = [];
  input.heap.forEach((h, i) => {
    if (!h.ok) reasons.push(`node ${i + 1}: ${h.why ?? 'heap grew'}`);
  });
  for (const c of input.checkpoints) {
    if (c.drift.length)
      reasons.push(`counts drifted at ${Math.round(c.t)} s: ${c.drift.slice(0, 3).join('; ')}`);
  }
  if (input.leftovers.length)
    reasons.push(`state left in Redis after every socket closed: ${input.leftovers.slice(0, 5).join(', ')}`);
  const unexpected = Object.entries(input.unexpectedCloses).filter(([, n]) => n > 0);
  if (unexpected.length)
    reasons.push(
      `sockets closed by the server unasked: ${unexpected.map(([c, n]) => `${n}× ${c}`).join(', ')}`,
    );
  if (input.wrongKicks) reasons.push(`${input.wrongKicks} sockets kicked that no kick matched`);
  if (input.missedKicks) reasons.push(`${input.missedKicks} sockets a kick matched stayed open`);
  if (input.failedOpens > input.opens * input.maxFailedShare)
    reasons.push(`${input.failedOpens} of ${input.opens} opens failed`);
  return { ok: reasons.length === 0, reasons };
}
