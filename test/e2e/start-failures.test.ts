import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startSwitchboardProcess } from '@switchboard/harness';

// Start-up failures a user can cause, each run as the command a user types: the process exits 1,
// keeps no listener open, and says what happened and what to do in exactly one stderr line.

const HOST = '127.0.0.1';
const dirs: string[] = [];
const servers: Server[] = [];

afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-start-fail-'));
  dirs.push(dir);
  return dir;
}

/** A plain TCP listener holding a port, as another program would. */
async function occupiedPort(): Promise<number> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const address = server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** Runs `switchboard <command>`; fails if it is still running after 10 s (half-started). */
async function failedStart(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string[] }> {
  const proc = startSwitchboardProcess([command], { HOST, ...env });
  let timer: NodeJS.Timeout | undefined;
  const stillRunning = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`still running 10 s after start; output:\n${proc.lines.join('\n')}`));
    }, 10_000);
  });
  try {
    const { code } = await Promise.race([proc.exited, stillRunning]);
    return { code, stderr: proc.errorLines.filter(Boolean) };
  } finally {
    clearTimeout(timer);
  }
}

const PORTS_OF: Record<string, readonly string[]> = {
  start: ['PORT', 'ACCOUNT_PORT', 'METRICS_PORT'],
  gateway: ['PORT', 'METRICS_PORT'],
  'account-api': ['ACCOUNT_PORT', 'METRICS_PORT'],
};

describe('a port already in use', () => {
  it.each([
    ['start', 'PORT'],
    ['start', 'ACCOUNT_PORT'],
    ['start', 'METRICS_PORT'],
    ['gateway', 'PORT'],
    ['gateway', 'METRICS_PORT'],
    ['account-api', 'ACCOUNT_PORT'],
    ['account-api', 'METRICS_PORT'],
  ])('switchboard %s with %s taken: exit 1, one line, no port left open', async (command, taken) => {
    const env: Record<string, string> = { SWITCHBOARD_DATA_DIR: dataDir() };
    for (const variable of PORTS_OF[command]!) {
      env[variable] = String(variable === taken ? await occupiedPort() : await freePort());
    }
    const { code, stderr } = await failedStart(command, env);
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `port ${env[taken]} (${taken}) is already in use on ${HOST}: stop the other process or set ${taken}`,
    ]);
    for (const variable of PORTS_OF[command]!) {
      if (variable !== taken) expect(await isFree(Number(env[variable]))).toBe(true);
    }
  });
});

describe('other start-up failures', () => {
  async function ports(): Promise<Record<string, string>> {
    return { PORT: String(await freePort()), ACCOUNT_PORT: String(await freePort()) };
  }

  it('a HOST that is not an address of this machine', async () => {
    const env = { ...(await ports()), SWITCHBOARD_DATA_DIR: dataDir(), HOST: '192.0.2.1' };
    const { code, stderr } = await failedStart('start', env);
    expect(code).toBe(1);
    expect(stderr).toEqual([
      'HOST 192.0.2.1 is not an address of this machine: set HOST to an address of this machine, or 0.0.0.0 for all of them',
    ]);
  });

  it('a keys file that is not JSON', async () => {
    const dir = dataDir();
    writeFileSync(join(dir, 'keys.json'), '[{"key": "k", "secret": "s3cr3t-value"');
    const env = { ...(await ports()), SWITCHBOARD_DATA_DIR: dir };
    const { code, stderr } = await failedStart('start', env);
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `the keys file ${dir}/keys.json is not valid JSON: restore it from a backup, or move it away to start with no keys`,
    ]);
    for (const port of Object.values(env).slice(0, 2)) expect(await isFree(Number(port))).toBe(true);
  });

  it('a keys file that does not hold keys', async () => {
    const dir = dataDir();
    writeFileSync(join(dir, 'keys.json'), '[{"key": "k", "domains": []}]');
    const { code, stderr } = await failedStart('gateway', { ...(await ports()), SWITCHBOARD_DATA_DIR: dir });
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `the keys file ${dir}/keys.json is damaged (entry 1 has no "secret"): restore it from a backup, or move it away to start with no keys`,
    ]);
  });

  it('a keys file that cannot be read', async () => {
    const dir = dataDir();
    mkdirSync(join(dir, 'keys.json'));
    const { code, stderr } = await failedStart('account-api', {
      ...(await ports()),
      SWITCHBOARD_DATA_DIR: dir,
    });
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `cannot read the keys file ${dir}/keys.json: it is a directory: make it readable by the user running Switchboard, or set SWITCHBOARD_DATA_DIR to another directory`,
    ]);
  });

  it('a data directory that cannot be written (a file on its path)', async () => {
    const file = join(dataDir(), 'file');
    writeFileSync(file, '');
    const { code, stderr } = await failedStart('start', {
      ...(await ports()),
      SWITCHBOARD_DATA_DIR: join(file, 'data'),
    });
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `cannot write to the data directory ${file}/data (SWITCHBOARD_DATA_DIR): a part of the path is not a directory: make it writable by the user running Switchboard, or set SWITCHBOARD_DATA_DIR to another directory`,
    ]);
  });

  it('Redis unreachable when the start needs it (writing SWITCHBOARD_KEYS)', async () => {
    const redisPort = await freePort();
    const { code, stderr } = await failedStart('gateway', {
      PORT: String(await freePort()),
      REDIS_URL: `redis://user:hunter2@${HOST}:${redisPort}`,
      SWITCHBOARD_KEYS: JSON.stringify([{ key: 'seeded', secret: 'seeded-secret' }]),
    });
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `Redis at ${HOST}:${redisPort} (REDIS_URL) is unreachable: start it, or set REDIS_URL to a server that answers`,
    ]);
  });

  it('a sentinel list none of which answers (REDIS_SENTINELS)', async () => {
    const sentinels = `${HOST}:${await freePort()},${HOST}:${await freePort()}`;
    const { code, stderr } = await failedStart('gateway', {
      PORT: String(await freePort()),
      REDIS_SENTINELS: sentinels,
      REDIS_SENTINEL_NAME: 'main',
    });
    expect(code).toBe(1);
    expect(stderr).toEqual([
      `Redis master main (REDIS_SENTINEL_NAME) of the sentinels at ${sentinels} (REDIS_SENTINELS) is unreachable: start them, or set REDIS_SENTINELS to sentinels that answer`,
    ]);
  });

  it('LOG_LEVEL=debug adds the stack trace after the line', async () => {
    const taken = await occupiedPort();
    const env = { PORT: String(taken), SWITCHBOARD_DATA_DIR: dataDir(), LOG_LEVEL: 'debug' };
    const { code, stderr } = await failedStart('gateway', env);
    expect(code).toBe(1);
    expect(stderr[0]).toBe(
      `port ${taken} (PORT) is already in use on ${HOST}: stop the other process or set PORT`,
    );
    expect(stderr.slice(1).some((line) => /^\s+at /.test(line))).toBe(true);
  });
});
