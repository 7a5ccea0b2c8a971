import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import Redis from 'ioredis';
import { existsSync, readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { ensureSoketi, soketiConfig } from './soketi';

export const ROOT = join(__dirname, '..', '..', '..');
/** Where the product under test lives (a checkout with built packages); `--product-dir` changes it. */
export const product = { dir: ROOT };
export const cliPath = (): string => join(product.dir, 'packages', 'cli', 'dist', 'main.js');

/** The Node flags the product starts its processes with (none for a product that predates them). */
export function productNodeFlags(): string[] {
  const file = join(product.dir, 'packages', 'cli', 'dist', 'node-flags.js');
  if (!existsSync(file)) return [];
  return [...(require(file) as { NODE_FLAGS: readonly string[] }).NODE_FLAGS];
}
/**
 * The product's publish script (history and message log in one call), which the ceiling server
 * runs in its `redis-script` mode instead of a plain `PUBLISH`.
 */
export function productPublishScript(): string {
  const file = join(product.dir, 'packages', 'core', 'dist', 'redis', 'history-scripts.js');
  return (require(file) as { PUBLISH_SOURCE: string }).PUBLISH_SOURCE;
}
/**
 * The product's script for several publications in one call (a standalone server's publications
 * of one event-loop turn), or '' for a product that has none: the ceiling then runs the single
 * script once per publication.
 */
export function productPublishBatchScript(): string {
  const file = join(product.dir, 'packages', 'core', 'dist', 'redis', 'history-scripts.js');
  return (require(file) as { PUBLISH_BATCH_SOURCE?: string }).PUBLISH_BATCH_SOURCE ?? '';
}
export const CEILING = join(__dirname, '..', 'ceiling', 'server.js');
export { HOST, KEY, SECRET } from './bench-keys';
import { HOST, KEY, SECRET } from './bench-keys';

/**
 * The Node.js the servers (gateways, ceilings) run on: this process's, or, with `--runtime nodeNN`,
 * `/opt/nodeNN/bin/node` inside the Debian 13 root `.ci/newer-runtimes.sh` prepared and mounted
 * (this repository is at the same path there). The load generators stay on this process's Node.js.
 */
export const serverRuntime: { root?: string; node?: string; version?: string } = {};

/** A server process the harness started (bash raises the fd limit, then execs node). */
export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly pid: number;
  readonly lines: string[];
  stop(): Promise<void>;
}

/** CPU seconds (user + system) a process used so far; 0 when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in 1/100 s (CLK_TCK)
  } catch {
    return 0;
  }
}

/**
 * Pins a process and all its threads to the given CPUs (`taskset -c` list, such as "0" or "1-3"):
 * a server measured on a core of its own while the load generator and Redis run on the others.
 */
export function pinToCpus(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) : 0;
}

/**
 * The shell prefix that raises the open-file limit of what it execs: to `want` when given (the
 * hard limit too, which needs CAP_SYS_RESOURCE; without it the soft limit goes as high as the
 * hard one allows), else to the hard limit. The machine's settings are left alone.
 */
export function fdLimitPrefix(want?: number): string {
  return want
    ? `ulimit -Hn ${want} 2>/dev/null; ulimit -n ${want} 2>/dev/null || ulimit -n $(ulimit -Hn) 2>/dev/null; `
    : 'ulimit -n $(ulimit -Hn) 2>/dev/null; ';
}

/** The open-file limit a process this harness starts can get (at most `want`). */
export function reachableFdLimit(want: number): number {
  const out = execFileSync('bash', ['-c', `${fdLimitPrefix(want)}ulimit -n`], { encoding: 'utf8' }).trim();
  return out === 'unlimited' ? want : Number(out) || 1024;
}

/** A running process's soft open-file limit, from /proc. */
export function fdLimitOf(pid: number): number {
  const match = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

/** Spawns `node <args>` through bash with `ulimit -n` raised; resolves once a `"msg":"ready"` line appears. */
export async function startNode(
  args: string[],
  env: Record<string, string>,
  options: {
    nodeOptions?: string;
    timeoutMs?: number;
    healthPath?: string;
    fdLimit?: number;
    /** Another Node binary (Soketi runs on its own Node 18). */
    execPath?: string;
    cwd?: string;
  } = {},
): Promise<ServerProcess> {
  const port = Number(env['PORT'] ?? (await freePort()));
  // Node flags such as --cpu-prof are not allowed in NODE_OPTIONS: they go on the command line.
  const nodeFlags = options.nodeOptions ? options.nodeOptions.split(' ').filter(Boolean) : [];
  // chroot and env exec in turn: the pid is the server's, for CPU readings and pinning. A system
  // with its own Node.js (Soketi on Node 18) names it in `execPath`.
  const launcher = options.execPath
    ? [options.execPath]
    : serverRuntime.root
      ? ['chroot', serverRuntime.root, '/usr/bin/env', '-C', ROOT, serverRuntime.node!]
      : [process.execPath];
  const quoted = [...launcher, ...nodeFlags, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  // 65,536 by default (the soak holds 10,000+ sockets per gateway), or what the scenario asks;
  // the hard limit where the machine allows no more.
  const child = spawn('bash', ['-c', `${fdLimitPrefix(options.fdLimit ?? 65_536)}exec ${quoted}`], {
    cwd: options.cwd ?? ROOT,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let rest = '';
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `not ready within ${options.timeoutMs ?? 20_000} ms: ${args.join(' ')}\n${lines.join('\n')}`,
          ),
        ),
      options.timeoutMs ?? 20_000,
    );
    const feed = (chunk: Buffer): void => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) {
        if (lines.length < 200) lines.push(line);
        if (line.includes('"msg":"ready"')) {
          clearTimeout(timer);
          resolve();
        }
      }
    };
    child.stdout?.on('data', feed);
    child.stderr?.on('data', feed);
    if (options.healthPath) {
      // LOG_LEVEL=warn hides the info-level "ready" line: poll the health endpoint instead.
      const probe = (): void => {
        fetch(`http://${HOST}:${port}${options.healthPath}`)
          .then((res) => {
            if (res.ok) {
              clearTimeout(timer);
              resolve();
            } else setTimeout(probe, 50);
          })
          .catch(() => {
            if (child.exitCode === null) setTimeout(probe, 50);
          });
      };
      setTimeout(probe, 100);
    }
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${args.join(' ')}\n${lines.join('\n')}`));
    });
  });
  await ready;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    child,
    port,
    pid: child.pid ?? 0,
    lines,
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function redisProcessId(port: number): Promise<number | undefined> {
  const client = new Redis({ host: HOST, port, lazyConnect: true });
  try {
    await client.connect();
    const info = await client.info('server');
    const match = /process_id:(\d+)/.exec(info);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

export type SystemName =
  | 'switchboard-redis'
  | 'switchboard-redis-history-off'
  | 'switchboard-memory'
  | 'ceiling-uws'
  | 'ceiling-redis'
  | 'ceiling-redis-script'
  /**
   * The ceiling and the history floor serving Pusher clients (`pusher:subscribe`) with Pusher's
   * event frames and taking Pusher's HTTP API bodies (their signatures unchecked): the Pusher
   * scenario's references, so every system of it sends the same frames to the same clients.
   */
  | 'ceiling-redis-pusher'
  | 'ceiling-redis-script-pusher'
  /** Pusher protocol (bench/src/scenarios/pusher.ts): Soketi 1.6.1, 2 nodes + its Redis adapter. */
  | 'soketi'
  /** Pusher protocol: Switchboard's gateways serving Pusher clients at `/app/{key}`. */
  | 'switchboard-pusher';

/** Systems whose clients speak the Pusher protocol and publish through Pusher's HTTP API. */
export const isPusherSystem = (name: SystemName): boolean =>
  name === 'soketi' ||
  name === 'switchboard-pusher' ||
  name === 'ceiling-redis-pusher' ||
  name === 'ceiling-redis-script-pusher';

/**
 * The Pusher app of the bench: id and key are `KEY` (a Switchboard key's app id is the key itself
 * unless it sets one), secret `SECRET`.
 */
export const PUSHER_APP_ID = KEY;

/** A Pusher subscriber's address as the Pusher fleet takes it: the socket URL, `#`, the channel. */
export function pusherSubscription(port: number, channel: string): string {
  return `ws://${HOST}:${port}/app/${KEY}?protocol=7&client=switchboard-bench&version=1.0#${encodeURIComponent(channel)}`;
}

/** The ceiling server's mode for each ceiling system (bench/src/ceiling/server.ts). */
const CEILING_MODE: Partial<Record<SystemName, string>> = {
  'ceiling-uws': 'single',
  'ceiling-redis': 'redis',
  'ceiling-redis-script': 'redis-script',
  'ceiling-redis-pusher': 'redis',
  'ceiling-redis-script-pusher': 'redis-script',
};

/** The ceiling systems that run the product's publish scripts. */
const runsScripts = (name: SystemName): boolean =>
  name === 'ceiling-redis-script' || name === 'ceiling-redis-script-pusher';

/** Switchboard systems that run on Redis (2 nodes + Redis in the throughput scenarios). */
export const onRedis = (name: SystemName): boolean => name !== 'switchboard-memory' && name !== 'ceiling-uws';

/**
 * Gateway environment of a system beyond `gatewayEnv`: history off is `HISTORY_SIZE=0`, under
 * which the publish script still runs (it still counts offsets and epochs, and publishes), but
 * stores nothing: what "off" saves is the LIST's RPUSH, LTRIM and EXPIRE and its memory.
 */
export const SYSTEM_ENV: Partial<Record<SystemName, Record<string, string>>> = {
  'switchboard-redis-history-off': { HISTORY_SIZE: '0' },
};

/** A running system under test: its server processes and how to reach them. */
export interface System {
  readonly name: SystemName;
  readonly nodes: ServerProcess[];
  readonly redis?: RedisServer;
  readonly publishPath: (protocol: 'v3' | 'v4') => string;
  /** How publishes are sent: Switchboard's REST body (default), or Pusher's signed HTTP API. */
  readonly publishFormat?: 'pusher';
  /** The redis-server process id, when there is one. */
  readonly redisPid?: number;
  wsUrl(node: number, protocol: 'v3' | 'v4', channel: string, extra?: string): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  nodes: number;
  nodeOptions?: string;
  /** Start gateways without the product's own Node flags (to show what they change). */
  nodeDefaults?: boolean;
  env?: Record<string, string>;
  /** Open files each server process asks for (default: the hard limit). */
  fdLimit?: number;
}

export const REDIS_PREFIX = 'bench';

/** The gateway environment every Switchboard node of the benchmark runs with. */
export function gatewayEnv(nodeId: string, redisUrl: string | undefined): Record<string, string> {
  return {
    HOST,
    NODE_ID: nodeId,
    ...(redisUrl ? { REDIS_URL: redisUrl, REDIS_PREFIX } : {}),
    SWITCHBOARD_KEYS: JSON.stringify([{ key: KEY, secret: SECRET }]),
    SWITCHBOARD_DATA_DIR: mkdtempSync(join(tmpdir(), 'sb-bench-')),
    LOG_LEVEL: 'warn',
    DRAIN_GRACE_MS: '2000',
    DRAIN_BATCH_SIZE: '5000',
  };
}

export async function startSystem(name: SystemName, options: StartOptions): Promise<System> {
  const redis = onRedis(name) ? await startRedis() : undefined;
  const nodes: ServerProcess[] = [];
  try {
    if (name === 'soketi') {
      if (!redis) throw new Error('soketi runs on Redis');
      nodes.push(...(await startSoketiNodes(options.nodes, redis.port)));
    }
    for (let i = 0; i < options.nodes && name !== 'soketi'; i++) {
      if (name.startsWith('switchboard')) {
        nodes.push(
          await startNode(
            [cliPath(), 'gateway'],
            {
              ...gatewayEnv(`bench-${i + 1}`, redis?.url),
              ...(SYSTEM_ENV[name] ?? {}),
              ...(options.env ?? {}),
            },
            {
              healthPath: '/api/health',
              ...(options.fdLimit ? { fdLimit: options.fdLimit } : {}),
              nodeOptions: [
                ...(options.nodeDefaults ? [] : productNodeFlags()),
                options.nodeOptions ?? '',
              ].join(' '),
            },
          ),
        );
      } else {
        nodes.push(
          await startNode(
            [CEILING, CEILING_MODE[name] ?? 'single'],
            {
              HOST,
              ...(redis ? { REDIS_URL: redis.url } : {}),
              ...(runsScripts(name)
                ? {
                    PUBLISH_SCRIPT: productPublishScript(),
                    PUBLISH_BATCH_SCRIPT: productPublishBatchScript(),
                  }
                : {}),
              ...(isPusherSystem(name) ? { PUSHER_FRAMES: '1' } : {}),
            },
            {
              ...(options.fdLimit ? { fdLimit: options.fdLimit } : {}),
              ...(options.nodeOptions ? { nodeOptions: options.nodeOptions } : {}),
            },
          ),
        );
      }
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    await redis?.stop();
    throw error;
  }
  const isSwitchboard = name.startsWith('switchboard');
  const pusher = isPusherSystem(name);
  const redisPid = redis ? await redisProcessId(redis.port) : undefined;
  return {
    name,
    nodes,
    ...(redis ? { redis } : {}),
    ...(redisPid ? { redisPid } : {}),
    ...(pusher ? { publishFormat: 'pusher' as const } : {}),
    publishPath: (protocol) =>
      pusher
        ? `/apps/${PUSHER_APP_ID}/events`
        : isSwitchboard
          ? protocol === 'v3'
            ? '/api/publish'
            : '/api/v4/publish'
          : '/publish',
    wsUrl: (node, protocol, channel, extra = '') =>
      pusher
        ? pusherSubscription(nodes[node % nodes.length]!.port, channel)
        : `ws://${HOST}:${nodes[node % nodes.length]!.port}/${protocol}/${channel}?api_key=${KEY}${extra}`,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
      await redis?.stop();
    },
  };
}

/** Starts `nodes` Soketi processes on one Redis; resolves once each answers HTTP. */
export async function startSoketiNodes(
  nodes: number,
  redisPort: number,
  log: (line: string) => void = console.log,
): Promise<ServerProcess[]> {
  const install = ensureSoketi(log);
  const started: ServerProcess[] = [];
  try {
    for (let i = 0; i < nodes; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'sb-bench-soketi-'));
      const port = await freePort();
      const config = soketiConfig({
        port,
        metricsPort: await freePort(),
        discoveryPort: await freePort(),
        redisPort,
        redisPrefix: 'bench-soketi',
      });
      const configPath = join(dir, 'config.json');
      writeFileSync(configPath, JSON.stringify(config));
      // cwd is the empty folder: Soketi loads a `.env` from its working directory.
      started.push(
        await startNode(
          [install.server, 'start', `--config=${configPath}`],
          { PORT: String(port) },
          {
            execPath: install.node,
            cwd: dir,
            healthPath: '/ready',
            timeoutMs: 30_000,
          },
        ),
      );
    }
  } catch (error) {
    await Promise.all(started.map((n) => n.stop()));
    throw error;
  }
  return started;
}
