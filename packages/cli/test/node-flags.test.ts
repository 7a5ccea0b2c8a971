import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_FLAGS } from '../src/node-flags';

const ROOT = join(__dirname, '..', '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

describe('Node flags (node-flags.ts)', () => {
  const flags = NODE_FLAGS.join(' ');

  it('are passed by the CLI shebang', () => {
    expect(read('packages/cli/src/main.ts').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${flags}`);
  });

  it('are passed by npm start', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['start']).toContain(`node ${flags} packages/cli/dist/main.js start`);
  });

  // The Docker image's ENTRYPOINT (which compose and Kubernetes only give arguments to): test/e2e/deploy-manifests.test.ts.
});
