import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** The built CLI entry point (`npm ci`/`npm run build` produce it). */
export const CLI_PATH = join(__dirname, '..', '..', 'cli', 'dist', 'main.js');

export interface SwitchboardProcess {
  readonly child: ChildProcess;
  /** Every stdout and stderr line so far. */
  readonly lines: string[];
  /** The stderr lines so far (also in `lines`). */
  readonly errorLines: string[];
  /** Resolves the first line (past or future) matching; rejects on timeout or exit. */
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves the first JSON log line whose fields match. */
  waitForLog(fields: Record<string, unknown>, timeoutMs?: number): Promise<Record<string, unknown>>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Runs `switchboard <args>` as a child process (a real node, killable with SIGKILL). `command`
 * replaces `node <CLI_PATH>`: another runtime, such as `chroot <root> … npx switchboard`. Such a
 * command runs in its own process group and `kill` signals the whole group, as a terminal's Ctrl-C
 * does: npx exits on SIGTERM without passing it to the product it started.
 */
export function startSwitchboardProcess(
  args: string[],
  env: Record<string, string>,
  command?: readonly string[],
): SwitchboardProcess {
  const [file, ...prefix] = command ?? [process.execPath, CLI_PATH];
  const child = spawn(file!, [...prefix, ...args], {
    detached: command !== undefined,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const errorLines: string[] = [];
  const waiters = new Set<() => void>();
  const feed = (chunk: Buffer, carry: { rest: string; into?: string[] }): void => {
    const parts = (carry.rest + chunk.toString('utf8')).split('\n');
    carry.rest = parts.pop() ?? '';
    lines.push(...parts);
    carry.into?.push(...parts);
    for (const wake of [...waiters]) wake();
  };
  const out = { rest: '' };
  const err = { rest: '', into: errorLines };
  child.stdout?.on('data', (chunk: Buffer) => feed(chunk, out));
  child.stderr?.on('data', (chunk: Buffer) => feed(chunk, err));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close', not 'exit': it comes after the last stdout and stderr data.
    child.once('close', (code, signal) => {
      if (out.rest) lines.push(out.rest);
      if (err.rest) lines.push(err.rest);
      if (err.rest) errorLines.push(err.rest);
      resolve({ code, signal });
      for (const wake of [...waiters]) wake();
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });

  const waitForLine = (match: (line: string) => boolean, timeoutMs = 15_000): Promise<string> =>
    new Promise((resolve, reject) => {
      let index = 0;
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no matching line within ${timeoutMs} ms; output:\n${lines.join('\n')}`));
      }, timeoutMs);
      const check = (): void => {
        for (; index < lines.length; index++) {
          if (match(lines[index]!)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(lines[index]!);
            return;
          }
        }
        if (done) {
          clearTimeout(timer);
          waiters.delete(check);
          reject(new Error(`process exited; output:\n${lines.join('\n')}`));
        }
      };
      waiters.add(check);
      check();
    });

  const parse = (line: string): Record<string, unknown> | undefined => {
    try {
      const value: unknown = JSON.parse(line);
      return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    child,
    lines,
    errorLines,
    waitForLine,
    waitForLog: async (fields, timeoutMs) => {
      const line = await waitForLine((candidate) => {
        const json = parse(candidate);
        return !!json && Object.entries(fields).every(([name, value]) => json[name] === value);
      }, timeoutMs);
      return parse(line)!;
    },
    exited,
    kill: (signal = 'SIGTERM') => {
      if (done) return;
      if (command) process.kill(-child.pid!, signal);
      else child.kill(signal);
    },
  };
}
