// Builds the web console (docs/console.md) into dist/console: the page, one script bundle
// (TypeScript through esbuild, uPlot included) and one stylesheet. No CDN: the files the
// account API serves are all the page loads.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'console', 'src', 'main.ts'), join(root, 'console', 'console.css')],
  outdir: out,
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  platform: 'browser',
  legalComments: 'none',
  logLevel: 'warning',
  entryNames: 'console',
});
copyFileSync(join(root, 'console', 'index.html'), join(out, 'index.html'));
copyFileSync(join(root, 'console', 'favicon.svg'), join(out, 'favicon.svg'));
