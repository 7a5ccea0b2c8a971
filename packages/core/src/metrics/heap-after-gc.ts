import { PerformanceObserver, constants } from 'node:perf_hooks';
import type { PerformanceEntry } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';

/**
 * The V8 heap used right after the latest full (mark-compact) collection: the live set plus what
 * was allocated between the collection and this reading (one turn at most). Used heap itself is a
 * sawtooth that says where the collector is in its cycle; this one only rises when more is kept,
 * so a leak shows as a climb (the soak run judges it, docs/reliability.md).
 *
 * One observer per process, started by the first caller; every metrics registry reads the same
 * value. 0 until the first full collection.
 */
let latest = 0;
let observer: PerformanceObserver | undefined;

interface GcDetail {
  readonly kind?: number;
}

function onEntries(entries: readonly PerformanceEntry[]): void {
  for (const entry of entries) {
    const kind = (entry as PerformanceEntry & { detail?: GcDetail }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      latest = getHeapStatistics().used_heap_size;
      return;
    }
  }
}

export function watchHeapAfterGc(): void {
  if (observer) return;
  observer = new PerformanceObserver((list) => onEntries(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
}

/** Bytes of heap used after the latest full collection seen (0 before the first). */
export function heapUsedAfterGc(): number {
  return latest;
}
