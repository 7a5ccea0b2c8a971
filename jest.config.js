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

module.exports = {
  testTimeout: 20000,
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/packages/*/test/**/*.test.ts',
        '<rootDir>/bench/test/**/*.test.ts',
        '<rootDir>/chaos/test/**/*.test.ts',
      ],
      testPathIgnorePatterns: ['\\.int\\.test\\.ts$'],
    },
    {
      ...base,
      displayName: 'redis',
      testMatch: ['<rootDir>/packages/*/test/**/*.int.test.ts', '<rootDir>/chaos/test/**/*.int.test.ts'],
    },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
  ],
};
