import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Captured<T> {
  result: T;
  stdout: string;
  stderr: string;
}

/** Runs `fn` with process.stdout and process.stderr writes captured (pino writes elsewhere). */
export async function captured<T>(fn: () => Promise<T>): Promise<Captured<T>> {
  let stdout = '';
  let stderr = '';
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  const err = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
  try {
    return { result: await fn(), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** A fresh data directory, so each test has its own keys file. */
export function tempDataDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-cli-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
