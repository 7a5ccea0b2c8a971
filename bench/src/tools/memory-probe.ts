import { readFileSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

/**
 * Preloaded into a server by `npm run bench:idle-memory` (`--expose-gc --require …/memory-probe.js`,
 * env MEMORY_PROBE_FILE): on SIGUSR2 it collects garbage twice and writes the process's
 * `process.memoryUsage()` to that file, so the tool reads heap and RSS after a full GC. Nothing of
 * the product is touched; without the env variable it does nothing. With MEMORY_PROBE_DUMP set, the
 * file also holds V8's heap spaces and the process's `/proc/self/smaps` (`--dump`); with
 * MEMORY_PROBE_GC=off it reads without collecting (`--gc off`: as the benchmark's memory rows read).
 */
const file = process.env['MEMORY_PROBE_FILE'];
if (file) {
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (process.env['MEMORY_PROBE_GC'] !== 'off') {
      gc?.();
      gc?.();
    }
    const dump = process.env['MEMORY_PROBE_DUMP']
      ? { spaces: getHeapSpaceStatistics(), smaps: readFileSync('/proc/self/smaps', 'utf8') }
      : {};
    writeFileSync(file, JSON.stringify({ ...process.memoryUsage(), ...dump }));
  });
}
