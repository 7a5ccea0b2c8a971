#!/usr/bin/env -S node --max-semi-space-size=8
import { runCommand } from './commands';

runCommand(process.argv.slice(2), process.env).then(
  (code) => {
    if (code === undefined) return;
    process.exitCode = code;
    // A command that finished (or a server that could not start) closed what it opened; a handle
    // a library might still hold must not keep the process alive, half-started.
    setTimeout(() => process.exit(), 1000).unref();
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
