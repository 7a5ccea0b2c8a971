import { writeFileSync } from 'node:fs';

/**
 * Preloaded into a server by `npm run bench:idle-memory` (`--expose-gc --require …/memory-probe.js`,
 * env MEMORY_PROBE_FILE): on SIGUSR2 it collects garbage twice and writes the process's
 * `process.memoryUsage()` to that file, so the tool reads heap and RSS after a full GC. Nothing of
 * the product is touched; without the env variable it does nothing.
 */
const file = process.env['MEMORY_PROBE_FILE'];
if (file) {
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    writeFileSync(file, JSON.stringify(process.memoryUsage()));
  });
}
