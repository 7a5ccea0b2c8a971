// Closes a run with one line per layer of the test pyramid (jest projects, named in
// jest.config.js) saying what passed; jest prints its own summary after it.
const { rank } = require('./layers');

/** One line per layer that ran, bottom up: what passed (and what failed) in how many files. */
function layerLines(testResults) {
  const layers = new Map();
  for (const file of testResults) {
    const name = typeof file.displayName === 'string' ? file.displayName : file.displayName?.name;
    const layer = layers.get(name) ?? { files: 0, failedFiles: 0, passed: 0, failed: 0, skipped: 0 };
    layer.files += 1;
    if (file.numFailingTests > 0 || file.testExecError) layer.failedFiles += 1;
    layer.passed += file.numPassingTests;
    layer.failed += file.numFailingTests;
    layer.skipped += file.numPendingTests + file.numTodoTests;
    layers.set(name, layer);
  }
  return [...layers.entries()]
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([name, l]) => {
      const verdict =
        l.failed > 0 || l.failedFiles > 0 ? `FAILED ${l.failed} tests (${l.failedFiles} files), ` : '';
      const skipped = l.skipped > 0 ? `, ${l.skipped} skipped` : '';
      return `${String(name).padEnd(12)} ${verdict}${l.passed} tests passed in ${l.files} file${l.files === 1 ? '' : 's'}${skipped}`;
    });
}

class LayerReporter {
  onRunComplete(_contexts, results) {
    const lines = layerLines(results.testResults);
    if (lines.length === 0) return;
    process.stderr.write(`\nLayers:\n${lines.map((line) => `  ${line}`).join('\n')}\n`);
  }
}

module.exports = LayerReporter;
module.exports.layerLines = layerLines;
