const { readdirSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

// Tests run from TypeScript sources: ts-jest only transpiles (`tsc -p tsconfig.tests.json`
// type-checks them in `npm run lint`).
const transform = {
  '^.+\\.ts$': [
    'ts-jest',
    { tsconfig: { module: 'commonjs', target: 'es2022', esModuleInterop: true, isolatedModules: true } },
  ],
};
const moduleNameMapper = { '^@switchboard/([a-z-]+)$': '<rootDir>/packages/$1/src' };
const base = { rootDir: __dirname, transform, moduleNameMapper, testEnvironment: 'node' };

// The contract layer: the test files that run a shared suite of packages/core/test/contracts/
// against one implementation of a port (in memory, or Redis in a `.int.test.ts`).
const coreTests = join(__dirname, 'packages', 'core', 'test');
const contractRunners = readdirSync(coreTests)
  .filter((name) => name.endsWith('.test.ts'))
  .filter((name) => /from '\.\/contracts\//.test(readFileSync(join(coreTests, name), 'utf8')))
  .map((name) => `<rootDir>/packages/core/test/${name}`);
const escape = (path) => path.replace('<rootDir>/', '').replace(/[.]/g, '\\.');
const notContract = contractRunners.map((path) => `${escape(path)}$`);

/**
 * The test pyramid, in the order `npm test` starts it (test/layer-sequencer.js): each layer is a jest
 * project, and `npm run test:<layer>` runs one alone.
 * - unit: one process, no Redis, no child processes of the product (seconds).
 * - contract: every port's contract suite against its in-memory and its Redis implementation.
 * - integration: the other `.int.test.ts` files, against a real redis-server.
 * - e2e: test/e2e, whole processes (the CLI, HAProxy, Chromium) as a user runs them.
 */
module.exports = {
  testTimeout: 20000,
  testSequencer: '<rootDir>/test/layer-sequencer.js',
  reporters: ['default', '<rootDir>/test/layer-reporter.js'],
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/packages/*/test/**/*.test.ts',
        '<rootDir>/bench/test/**/*.test.ts',
        '<rootDir>/chaos/test/**/*.test.ts',
        '<rootDir>/test/*.test.ts',
      ],
      testPathIgnorePatterns: ['\\.int\\.test\\.ts$', ...notContract],
    },
    { ...base, displayName: 'contract', testMatch: contractRunners },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/packages/*/test/**/*.int.test.ts', '<rootDir>/chaos/test/**/*.int.test.ts'],
      testPathIgnorePatterns: notContract,
    },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
  ],
};
