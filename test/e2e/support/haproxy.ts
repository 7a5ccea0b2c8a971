import { spawn } from 'node:child_process';
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
}

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
    if (trimmed.startsWith('maxconn ')) {
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
  close(): Promise<void>;
}

/** Starts `haproxy` in the foreground with the rendered config and waits until it accepts connections. */
export async function startHaproxy(options: HaproxyOptions): Promise<RunningHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, renderHaproxyConfig(options));
  const child = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
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
    close: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
