import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from '../src/wait';

// runMain, in a real process (the built package, as the benchmark runs it): a command that
// started a child and then failed (or got SIGTERM) leaves no process behind, and ends as it should.

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A command whose main starts `sleep 60` and prints its pid, then fails or waits. */
function command(mode: 'fail' | 'wait'): {
  pid: Promise<number>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill: (s: NodeJS.Signals) => void;
} {
  const source = `
    const { spawn } = require('node:child_process');
    const { runMain } = require(${JSON.stringify(join(__dirname, '..', 'dist', 'descendants.js'))});
    runMain('probe', async () => {
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      process.stdout.write(child.pid + '\\n');
      if (${JSON.stringify(mode)} === 'fail') throw new Error('the probe failed');
      await new Promise(() => undefined);
    }, 3);`;
  const proc = spawn(process.execPath, ['-e', source], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = new Promise<number>((resolve) =>
    proc.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { pid, exit, kill: (s) => proc.kill(s) };
}

describe('runMain', () => {
  it('on a failure stops what the command started and exits with the failure code', async () => {
    const run = command('fail');
    const child = await run.pid;
    expect(await run.exit).toEqual({ code: 3, signal: null });
    await waitFor('the child gone', () => !alive(child), 5000);
  });

  it('on SIGTERM stops what the command started and ends by the same signal', async () => {
    const run = command('wait');
    const child = await run.pid;
    expect(alive(child)).toBe(true);
    run.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: null, signal: 'SIGTERM' });
    await waitFor('the child gone', () => !alive(child), 5000);
  });
});
