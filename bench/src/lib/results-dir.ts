import { join } from 'node:path';

/**
 * Where a run keeps its results. A trial (`--quick`, `--no-docs`) writes to `bench/results/tmp/`
 * (not committed), so it can never overwrite the published record in `bench/results/`, from
 * which docs/benchmarks.md is generated.
 */
export function resultsDir(root: string, o: { quick: boolean; docs: boolean }): string {
  return join(root, 'bench', 'results', ...(o.quick || !o.docs ? ['tmp'] : []));
}
