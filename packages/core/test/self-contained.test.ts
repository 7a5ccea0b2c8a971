/**
 * The repository explains itself: code comments and docs point at its own docs (docs/protocol.md
 * and the others), never at the product specification or research notes kept outside it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(__dirname, '../../..');
const SKIP = new Set(['node_modules', 'dist', '.git', 'results', '.switchboard']);
const TEXT = /\.(ts|js|mjs|c|md|ya?ml|cfg|json)$/;
/** Citations of documents that are not in the repository. */
const OUTSIDE = /\bSPEC(\.md)?\s*§|\bSPEC\.md\b|rest-interface(\.md)?\s*§|\bresearch\s*§/;

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (TEXT.test(entry.name) && entry.name !== 'package-lock.json') yield path;
  }
}

it('cites no document outside the repository', () => {
  const citing: string[] = [];
  for (const path of files(root)) {
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.test(line)) citing.push(`${relative(root, path)}:${i + 1}`);
      });
  }
  expect(citing).toEqual([]);
});
