// The test pyramid's machinery (jest.config.js): layers start bottom up, and the run closes with
// one line per layer saying what passed.
/* eslint-disable @typescript-eslint/no-require-imports */
const { LAYERS, rank } = require('./layers') as { LAYERS: string[]; rank: (name: unknown) => number };
const { layerLines } = require('./layer-reporter') as { layerLines: (results: object[]) => string[] };
const LayerSequencer = require('./layer-sequencer') as new () => { sort(tests: object[]): object[] };

const file = (layer: string, passed: number, failed = 0, skipped = 0): object => ({
  displayName: { name: layer, color: 'white' },
  numPassingTests: passed,
  numFailingTests: failed,
  numPendingTests: skipped,
  numTodoTests: 0,
});

describe('the test pyramid', () => {
  it('orders the layers unit, contract, integration, e2e; anything else after them', () => {
    expect(LAYERS).toEqual(['unit', 'contract', 'integration', 'e2e']);
    expect(['e2e', 'other', 'unit', 'integration', 'contract'].sort((a, b) => rank(a) - rank(b))).toEqual([
      'unit',
      'contract',
      'integration',
      'e2e',
      'other',
    ]);
    expect(rank({ name: 'contract', color: 'blue' })).toBe(1);
  });

  it('starts the test files bottom up', () => {
    const test = (layer: string, path: string): object => ({
      path,
      duration: 1,
      context: { config: { displayName: { name: layer }, cache: false }, hasteFS: { getSize: () => 1 } },
    });
    const sorted = new LayerSequencer().sort([
      test('e2e', '/e.test.ts'),
      test('integration', '/i.test.ts'),
      test('unit', '/u.test.ts'),
      test('contract', '/c.test.ts'),
    ]) as Array<{ path: string }>;
    expect(sorted.map((t) => t.path)).toEqual(['/u.test.ts', '/c.test.ts', '/i.test.ts', '/e.test.ts']);
  });

  it('closes with one line per layer: what passed, what failed, in how many files', () => {
    expect(
      layerLines([file('e2e', 3, 1), file('unit', 10), file('unit', 5, 0, 2), file('contract', 1)]),
    ).toEqual([
      'unit         15 tests passed in 2 files, 2 skipped',
      'contract     1 tests passed in 1 file',
      'e2e          FAILED 1 tests (1 files), 3 tests passed in 1 file',
    ]);
  });
});
