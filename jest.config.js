// Tests run from TypeScript sources (swc transpiles; `tsc -p tsconfig.tests.json` type-checks them).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] };
const moduleNameMapper = { '^@switchboard/([a-z-]+)$': '<rootDir>/packages/$1/src' };
const base = { rootDir: __dirname, transform, moduleNameMapper, testEnvironment: 'node' };

module.exports = {
  testTimeout: 20000,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/packages/*/test/**/*.test.ts'], testPathIgnorePatterns: ['\\.int\\.test\\.ts$'] },
    { ...base, displayName: 'redis', testMatch: ['<rootDir>/packages/*/test/**/*.int.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
  ],
};
