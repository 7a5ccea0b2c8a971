// The CLI's programmatic face (the package's `main`): what the end-to-end suites drive without a
// child process. `switchboard` itself starts from main.ts.
export { runKeys } from './commands/keys';
export { NODE_FLAGS } from './node-flags';
export { createEngine } from './engine';
