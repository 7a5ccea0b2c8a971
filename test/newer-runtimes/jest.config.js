// The newer-runtime end-to-end set: run by .ci/newer-runtimes.sh (which prepares the Debian 13 root
// it needs), never by `npm test`, whose projects do not match this directory.
const { projects } = require('../../jest.config.js');
const e2e = projects.find((project) => project.displayName === 'e2e');

module.exports = {
  ...e2e,
  displayName: 'newer-runtimes',
  testMatch: ['<rootDir>/test/newer-runtimes/**/*.test.ts'],
  testTimeout: 60000,
};
