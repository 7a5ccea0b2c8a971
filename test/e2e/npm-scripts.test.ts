import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@switchboard/harness';
import { connectClient } from '@switchboard/testing';

// npm scripts that start long-running processes, run as a process manager or a terminal runs
// them (systemd `ExecStart=npm start`, a container command, Ctrl-C): a signal to npm must reach
// the product, which drains and exits, npm exits with it, and no process is left behind.

const ROOT = join(__dirname, '..', '..');
const HOST = '127.0.0.1';
const KEY = 'npm-start-key';
const dirs: string[] = [];
/** Every process the scripts started, by identity (see `ProcessEntry.id`). */
const seen = new Set<string>();

afterAll(() => {
  for (const id of alive(seen)) process.kill(Number(id.split(' ')[0]), 'SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface ProcessEntry {
  pid: number;
  ppid: number;
  /** "pid starttime": one process over time, even if its pid is reused later. */
  id: string;
  cmdline: string;
}

/** The live processes of the machine (zombies left out), from /proc. */
function processTable(): ProcessEntry[] {
  const table: ProcessEntry[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // After "pid (comm) ": state, ppid, … and starttime, the 22nd field of the whole line.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ');
      table.push({ pid: Number(name), ppid: Number(fields[1]), id: `${name} ${fields[19]}`, cmdline });
    } catch {
      // The process ended while being read.
    }
  }
  return table;
}

/** `root` and its descendants now; each is remembered in `seen` for the final clean-up. */
function tree(root: number): ProcessEntry[] {
  const table = processTable();
  const found = table.filter((entry) => entry.pid === root);
  for (let i = 0; i < found.length; i++) {
    found.push(...table.filter((entry) => entry.ppid === found[i]!.pid));
  }
  for (const entry of found) seen.add(entry.id);
  return found;
}

/** Which of the processes `ids` still run. */
function alive(ids: Iterable<string>): string[] {
  const running = new Set(processTable().map((entry) => entry.id));
  return [...ids].filter((id) => running.has(id));
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

type Exit = { code: number | null; signal: NodeJS.Signals | null };

/**
 * Spawns `npm <args>` (no shell of the test's own), leader of its own process group as under a
 * terminal; resolves once `ready(output)` holds.
 */
async function npm(
  args: string[],
  env: Record<string, string>,
  ready: (output: string) => boolean,
): Promise<{ child: ChildProcess; exited: Promise<Exit> }> {
  const child = spawn('npm', args, {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
  });
  // 'exit', not 'close': an orphan left holding npm's stdout would delay 'close' until it ends.
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm ${args.join(' ')}: not ready in 90 s:\n${output}`)),
      90_000,
    );
    const feed = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (ready(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', feed);
    child.stderr?.on('data', feed);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`npm ${args.join(' ')} exited:\n${output}`));
    });
  });
  return { child, exited };
}

describe('npm start', () => {
  it.each([
    ['SIGTERM to npm (a process manager)', 'npm'],
    ['SIGINT to its process group (Ctrl-C in a terminal)', 'group'],
  ] as const)(
    '%s: the product drains, exits 0 with npm, and leaves nothing',
    async (_, target) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'sb-npm-start-'));
      dirs.push(dataDir);
      const port = await freePort();
      const accountPort = await freePort();
      const env = {
        PORT: String(port),
        ACCOUNT_PORT: String(accountPort),
        HOST,
        SWITCHBOARD_DATA_DIR: dataDir,
        SWITCHBOARD_KEYS: JSON.stringify([{ key: KEY, secret: 'npm-start-secret' }]),
      };
      const { child, exited } = await npm(['start'], env, (output) =>
        /"component":"gateway".*"msg":"ready"/.test(output),
      );
      const started = tree(child.pid!);
      expect(started.some((entry) => entry.cmdline.includes('packages/cli/dist/main.js start'))).toBe(true);
      const client = await connectClient(`ws://${HOST}:${port}/v3/room-1?api_key=${KEY}`);

      if (target === 'npm') process.kill(child.pid!, 'SIGTERM');
      else process.kill(-child.pid!, 'SIGINT');

      const closed = await Promise.race([
        client.closed,
        new Promise((resolve) => setTimeout(() => resolve('no close within 15 s'), 15_000).unref()),
      ]);
      expect(closed).toMatchObject({ code: 4000 });
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(await isFree(port)).toBe(true);
      expect(await isFree(accountPort)).toBe(true);
      expect(alive(started.map((entry) => entry.id))).toEqual([]);
    },
    120_000,
  );
});

describe('npm run bench', () => {
  it('SIGTERM to npm stops the gateways and workers it started, then the harness', async () => {
    const { child, exited } = await npm(
      ['run', 'bench', '--', '--quick', '--scenarios', 'memory', '--systems', 'switchboard-memory'],
      {},
      (output) => output.includes('memory: '),
    );
    // The scenario is starting its processes; no event tells when: poll the process tree.
    let started = tree(child.pid!);
    const running = (part: string): boolean => started.some((entry) => entry.cmdline.includes(part));
    const deadline = Date.now() + 60_000;
    while (!(running('main.js gateway') && running('workers/client.js')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      started = tree(child.pid!);
    }
    expect(running('main.js gateway') && running('workers/client.js')).toBe(true);

    process.kill(child.pid!, 'SIGTERM');

    expect(await exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(alive(started.map((entry) => entry.id))).toEqual([]);
  }, 180_000);
});
