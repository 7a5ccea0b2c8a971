import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface HaproxyBackend {
  /** Server name in HAProxy's logs and stats (gw1, gw2, …). */
  name: string;
  port: number;
  host?: string;
}

export interface HaproxyOptions {
  listenPort: number;
  backends: HaproxyBackend[];
  /** Health-check interval; the shipped 2 s is slow for tests. */
  checkIntervalMs?: number;
  /** A Unix socket for HAProxy's runtime API (`show stat`); startHaproxy always sets one. */
  statsSocket?: string;
}

/** One server of the `gateways` backend as HAProxy's runtime API reports it (`show stat`). */
export interface HaproxyServerState {
  name: string;
  /** `UP`, `DOWN`, `UP 1/2` (failing, not yet down), `MAINT`, `no check`… */
  status: string;
  /** Last health check: `L7OK`, `L7STS` (bad status), `L4CON` (refused)… */
  checkStatus: string;
  /** Sessions open to this server now (upgraded WebSockets included). */
  sessions: number;
}

const INSTALL_HINT =
  'haproxy is not installed: the load-balancer tests run the real HAProxy. Install it with ' +
  '`apt-get install haproxy` (Debian/Ubuntu; .ci/run installs it when missing) or `brew install haproxy` (macOS).';

/**
 * The `haproxy` binary: on PATH, else where Debian and Homebrew put it (Debian installs it in
 * /usr/sbin, which is not on an ordinary user's PATH). Undefined when it is not installed.
 */
export function haproxyBinary(): string | undefined {
  for (const candidate of [
    'haproxy',
    '/usr/sbin/haproxy',
    '/usr/local/sbin/haproxy',
    '/opt/homebrew/bin/haproxy',
  ]) {
    const found = spawnSync(candidate, ['-v'], { stdio: 'ignore' });
    if (!found.error && found.status === 0) return candidate;
  }
  return undefined;
}

/** Whether haproxy is installed. */
export function haproxyInstalled(): boolean {
  return haproxyBinary() !== undefined;
}

/** The haproxy binary; throws, saying how to install it, when it is missing (for suites that must not skip). */
export function requireHaproxy(): string {
  const binary = haproxyBinary();
  if (!binary) throw new Error(INSTALL_HINT);
  return binary;
}

/** deploy/haproxy.cfg, from src/ (ts-jest) and from dist/ alike: both sit two levels below the root. */
const SHIPPED = join(__dirname, '..', '..', '..', 'deploy', 'haproxy.cfg');

/**
 * The shipped deploy/haproxy.cfg, adapted to gateways on this machine: same defaults, timeouts,
 * balancing and health check, but listening on 127.0.0.1:listenPort, with the given backends
 * instead of the Compose service names, no Docker DNS resolvers, no stats listener, and a maxconn
 * that fits an ordinary file-descriptor limit.
 */
export function renderHaproxyConfig(options: HaproxyOptions): string {
  const inter = `${options.checkIntervalMs ?? 2000}ms`;
  const out: string[] = [];
  let section = '';
  for (const line of readFileSync(SHIPPED, 'utf8').split('\n')) {
    const trimmed = line.trim();
    if (/^\S/.test(line)) section = trimmed.split(/\s+/).slice(0, 2).join(' ');
    if (section.startsWith('resolvers') || section === 'frontend stats') continue;
    if (line === 'global' && options.statsSocket) {
      out.push(line, `    stats socket ${options.statsSocket} mode 600 level user`);
    } else if (trimmed.startsWith('maxconn ')) {
      out.push('    maxconn 4096'); // the shipped 100000 needs an FD limit a test process rarely has
    } else if (trimmed.startsWith('bind ')) {
      out.push(`    bind 127.0.0.1:${options.listenPort}`);
    } else if (trimmed.startsWith('default-server ')) {
      out.push(`    default-server check inter ${inter} fall 2 rise 1`);
    } else if (trimmed.startsWith('server ')) {
      continue;
    } else {
      out.push(line);
    }
    if (section === 'backend gateways' && trimmed.startsWith('default-server ')) {
      for (const backend of options.backends) {
        out.push(`    server ${backend.name} ${backend.host ?? '127.0.0.1'}:${backend.port}`);
      }
    }
  }
  return out.join('\n');
}

export interface RunningHaproxy {
  port: number;
  /** HAProxy's stdout and stderr so far (its access log goes to stdout). */
  output(): string;
  /** The servers of the `gateways` backend as HAProxy sees them now (runtime API `show stat`). */
  servers(): Promise<HaproxyServerState[]>;
  close(): Promise<void>;
}

/**
 * Starts `haproxy` in the foreground with the rendered config and waits until it accepts connections.
 * Throws, saying how to install it, when haproxy is not installed.
 */
export async function startHaproxy(options: HaproxyOptions): Promise<RunningHaproxy> {
  const binary = requireHaproxy();
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  const statsSocket = options.statsSocket ?? join(dir, 'admin.sock');
  writeFileSync(file, renderHaproxyConfig({ ...options, statsSocket }));
  const child = spawn(binary, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.on('error', (error) => (output += `${error.message}\n`));
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited at start:\n${output}`);
    const accepting = await new Promise<boolean>((resolve) => {
      const socket = connect(options.listenPort, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (accepting) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`haproxy did not listen on ${options.listenPort}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port: options.listenPort,
    output: () => output,
    servers: async () => parseServers(await runtimeCommand(statsSocket, 'show stat')),
    close: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sends one command to HAProxy's runtime API and resolves with the whole answer. */
function runtimeCommand(socketPath: string, command: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`haproxy runtime API: no answer to "${command}" within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.once('end', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.once('connect', () => socket.write(`${command}\n`));
  });
}

/** The `gateways` servers of a `show stat` CSV answer. */
function parseServers(csv: string): HaproxyServerState[] {
  const [header, ...rows] = csv.split('\n').filter((line) => line.trim() !== '');
  const columns = (header ?? '').replace(/^# /, '').split(',');
  const at = (cells: string[], name: string): string => cells[columns.indexOf(name)] ?? '';
  return rows
    .map((row) => row.split(','))
    .filter(
      (cells) => at(cells, 'pxname') === 'gateways' && !['FRONTEND', 'BACKEND'].includes(at(cells, 'svname')),
    )
    .map((cells) => ({
      name: at(cells, 'svname'),
      status: at(cells, 'status'),
      checkStatus: at(cells, 'check_status'),
      sessions: Number(at(cells, 'scur')),
    }));
}
