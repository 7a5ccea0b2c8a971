// Builds the parts of @switchboard/client that `tsc -b` does not: the ESM build (dist/esm, with
// .d.mts types), and the browser bundles (dist/browser: ESM and the IIFE global `Switchboard`),
// then reports the bundles' minified and gzipped sizes (docs/client.md, "Bundle size").
// `tsc -b` has already written the CommonJS build and its declarations to dist/cjs.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = (name) => join(root, 'src', name);
const dist = (...parts) => join(root, 'dist', ...parts);
const common = {
  bundle: true,
  target: 'es2020',
  platform: 'neutral',
  legalComments: 'none',
  logLevel: 'warning',
};

// Chunk names carry content hashes: start from empty directories so no stale file ships.
for (const dir of ['esm', 'browser']) rmSync(dist(dir), { recursive: true, force: true });

// ESM for bundlers and Node: both entry points, sharing one chunk.
await build({
  ...common,
  entryPoints: { index: src('index.ts'), piesocket: src('piesocket.ts') },
  outdir: dist('esm'),
  format: 'esm',
  splitting: true,
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunk-[hash]',
});

// Declarations for ESM importers: the CommonJS ones, as .d.mts, with explicit extensions.
mkdirSync(dist('esm'), { recursive: true });
for (const file of readdirSync(dist('cjs')).filter((name) => name.endsWith('.d.ts'))) {
  const text = readFileSync(dist('cjs', file), 'utf8')
    .replace(/(from\s+'\.\/[\w-]+)(')/g, '$1.mjs$2')
    .replace(/(import\('\.\/[\w-]+)('\))/g, '$1.mjs$2')
    .replace(/\/\/# sourceMappingURL=.*$/m, '');
  writeFileSync(dist('esm', file.replace(/\.d\.ts$/, '.d.mts')), text);
}

// Browser bundles: the client, and the PieSocket facade, each as ESM and as a global.
const bundles = [
  { entry: 'index.ts', name: 'switchboard', global: 'Switchboard' },
  { entry: 'piesocket.ts', name: 'switchboard-piesocket', global: 'PieSocket' },
];
const sizes = [];
for (const bundle of bundles) {
  for (const [format, file] of [
    ['esm', `${bundle.name}.min.mjs`],
    ['iife', `${bundle.name}.iife.min.js`],
  ]) {
    await build({
      ...common,
      entryPoints: [src(bundle.entry)],
      format,
      ...(format === 'iife' ? { globalName: bundle.global } : {}),
      minify: true,
      sourcemap: 'external',
      platform: 'browser',
      outfile: dist('browser', file),
    });
    const code = readFileSync(dist('browser', file));
    sizes.push({ file, minified: code.length, gzipped: gzipSync(code, { level: 9 }).length });
  }
}
writeFileSync(dist('browser', 'sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`);
const kib = (bytes) => `${(bytes / 1024).toFixed(2)} KiB`;
for (const { file, minified, gzipped } of sizes)
  process.stdout.write(`@switchboard/client ${file}: ${kib(minified)} minified, ${kib(gzipped)} gzipped\n`);
