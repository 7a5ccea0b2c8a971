import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real `redis-server` processes for tests, each on a free port (never 6379: a shared Redis may
 * run there), without persistence. Suites own their servers, so they can kill and restart them.
 */

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** The running process's id (the launcher's, when there is one); undefined while it is down. */
  readonly pid: number | undefined;
  /** Graceful stop (SIGTERM), resolves once the process exited. */
  stop(): Promise<void>;
  /** SIGKILL, resolves once the process exited: an outage as clients see a crash. */
  kill(): Promise<void>;
  /** Starts the server again on the same port (empty: there is no persistence). */
  restart(): Promise<void>;
  /**
   * SIGSTOP: the server hangs with its connections open, as a stalled or half-open server looks
   * to clients (commands are written, nothing answers). `thaw` (SIGCONT) lets it run what it
   * received meanwhile.
   */
  freeze(): void;
  thaw(): void;
}

export interface RedisClusterHandle {
  readonly nodes: { host: string; port: number }[];
  /** `REDIS_CLUSTER_NODES` form: "127.0.0.1:p1,127.0.0.1:p2,…" */
  readonly nodesEnv: string;
  stop(): Promise<void>;
  /** SIGKILL every node: the whole cluster is gone, as clients see it (`restartNode` starts one again). */
  kill(): Promise<void>;
  /** Starts every node again on its port; they rejoin from nodes.conf (data is empty). */
  restart(): Promise<void>;
  /** Signals one node's process (by port): SIGKILL to crash it, SIGSTOP / SIGCONT to stall it. */
  signal(port: number, signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): void;
  /** SIGKILLs one node (by port) and resolves once it exited. */
  killNode(port: number): Promise<void>;
  /**
   * Starts one killed node again on its port from its nodes.conf (its data is empty): it rejoins,
   * and a master whose slots a replica took over meanwhile comes back as that replica's replica.
   * `args` are added to its command line for this start (say `--maxmemory 1`: writes refused).
   */
  restartNode(port: number, args?: readonly string[]): Promise<void>;
  /** The nodes as the node on `port` (default: the first that answers) sees them (`CLUSTER NODES`). */
  topology(port?: number): Promise<RedisClusterNode[]>;
  /** The hash slot of `key` (`CLUSTER KEYSLOT`, asked of the first node that answers). */
  keySlot(key: string): Promise<number>;
  /** Whether the node on `port` is a replica whose link to its master is up. */
  inSync(port: number): Promise<boolean>;
  /** Whether the node on `port` answers and reports `cluster_state:ok` and itself a master. */
  servesAsMaster(port: number): Promise<boolean>;
}

/** One row of `CLUSTER NODES`. */
export interface RedisClusterNode {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  /** The master's id, for a replica. */
  readonly masterId: string | undefined;
  /** Flagged `fail` or `fail?` by the node that answered. */
  readonly failing: boolean;
  /** Slot ranges it serves, inclusive (masters). */
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** Parses `CLUSTER NODES` (the bulk string's text). */
function parseClusterNodes(text: string): RedisClusterNode[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line) => {
      const [id = '', address = '', flags = '', master = '-', , , , , ...slots] = line.split(' ');
      const port = Number(address.split('@')[0]!.split(':').pop());
      const flagList = flags.split(',');
      return {
        id,
        port,
        role: flagList.includes('master') ? 'master' : 'replica',
        masterId: master === '-' ? undefined : master,
        failing: flagList.includes('fail') || flagList.includes('fail?'),
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return [from!, to!] as const;
          }),
      };
    });
}

/** The text of a bulk-string reply (`$<length>\r\n<text>\r\n`). */
const bulkText = (reply: string): string => reply.slice(reply.indexOf('\r\n') + 2).replace(/\r\n$/, '');

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
/**
 * `redis-cli --cluster create` assigns the slots, then waits for the nodes to agree through their
 * gossip: a second or two, several times that on a machine that runs the whole suite's workers.
 */
const CLUSTER_CREATE_TIMEOUT_MS = 30_000;

function redisServerBinary(): string {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (found.error || found.status !== 0) {
    throw new Error(
      'redis-server was not found on PATH. The Redis test suites spawn their own servers: install it with ' +
        '`apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).',
    );
  }
  return 'redis-server';
}

/** A port the OS reports free now (bound to 0, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** Whether `port` can be bound on 127.0.0.1 now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000, Redis's rule) is free and valid too. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10000 <= 65535 && (await isFree(port + 10000))) return port;
  }
}

/** The server exited at start: its port was taken between choosing it and binding it. */
class PortTakenError extends Error {}

/**
 * Starts servers on freshly chosen ports, choosing again when one lost the race for its port
 * (another process bound it between `freePort` and redis-server's own bind).
 */
async function onFreshPorts<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt >= 5) throw error;
    }
  }
}

/** Whether `reply` holds a whole simple, error, integer or bulk-string RESP reply. */
function replyComplete(reply: string): boolean {
  const headerEnd = reply.indexOf('\r\n');
  if (headerEnd < 0) return false;
  if (!reply.startsWith('$')) return true;
  const length = Number(reply.slice(1, headerEnd));
  return length < 0 || Buffer.byteLength(reply) >= headerEnd + 2 + length + 2;
}

/** Sends one inline command and resolves with the raw reply, or rejects on connection errors. */
function rawCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (replyComplete(reply)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(reply);
      }
    });
    socket.connect(port, HOST, () => socket.write(`${command}\r\n`));
  });
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ready = await check().catch((error: unknown) => {
      if (error instanceof PortTakenError) throw error;
      return false;
    });
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** How a standalone server is started beyond its port and data directory. */
export interface RedisServerOptions {
  /** More `redis-server` arguments, such as `['--hz', '1']`. */
  readonly args?: readonly string[];
  /**
   * A command the server runs under, its arguments included, such as
   * `['valgrind', '--tool=callgrind']` (the benchmark counts Redis' instructions so).
   */
  readonly launcher?: readonly string[];
}

function spawnServer(
  port: number,
  args: readonly string[],
  cwd: string,
  launcher: readonly string[] = [],
): ChildProcess {
  const server = [
    redisServerBinary(),
    ...['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', cwd, ...args],
  ];
  const [command, ...rest] = [...launcher, ...server] as [string, ...string[]];
  const child = spawn(command, rest, { cwd, stdio: 'ignore' });
  child.on('error', () => undefined);
  return child;
}

async function startProcess(
  port: number,
  args: readonly string[],
  cwd: string,
  launcher?: readonly string[],
): Promise<ChildProcess> {
  const child = spawnServer(port, args, cwd, launcher);
  try {
    await waitFor(`redis-server on port ${port}`, async () => {
      if (child.exitCode !== null) throw new PortTakenError(`redis-server on port ${port} exited at start`);
      return (await rawCommand(port, 'PING')).startsWith('+PONG');
    });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

/**
 * One standalone server on a free port, or on `port` (say one from `fixedFreePort`, outside the
 * ephemeral range, for a server that is restarted many times: while it is down, an outgoing
 * connection of a busy machine could take an ephemeral port).
 */
export async function startRedis(options: { port?: number } & RedisServerOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
  const { args = [], launcher } = options;
  const { port, started } =
    options.port === undefined
      ? await onFreshPorts(async () => {
          const candidate = await freePort();
          return { port: candidate, started: await startProcess(candidate, args, dir, launcher) };
        })
      : { port: options.port, started: await startProcess(options.port, args, dir, launcher) };
  let child: ChildProcess | undefined = started;
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const current = child;
    child = undefined;
    if (!current) return;
    current.kill(signal);
    await exited(current);
  };
  return {
    url: `redis://${HOST}:${port}`,
    port,
    get pid() {
      return child?.pid;
    },
    kill: () => end('SIGKILL'),
    stop: async () => {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await end('SIGKILL');
      child = await startProcess(port, args, dir, launcher);
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
}

/**
 * Three masters joined with `redis-cli --cluster create`, all slots covered; with `replicas: 1`,
 * one replica each (six nodes), which the cluster promotes when its master fails.
 */
export async function startRedisCluster(options: { replicas?: 0 | 1 } = {}): Promise<RedisClusterHandle> {
  const replicas = options.replicas ?? 0;
  let ports: number[] = [];
  const dirs = Array.from({ length: 3 * (1 + replicas) }, () =>
    mkdtempSync(join(tmpdir(), 'sb-redis-cluster-')),
  );
  const clusterArgs = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    '2000',
  ];
  let children: ChildProcess[] = [];
  // The exited processes stay in `children`, so `restartNode` can start any of them again.
  const kill = async (): Promise<void> => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(exited));
  };
  const stop = async (): Promise<void> => {
    await kill();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  const startAll = async (): Promise<void> => {
    const started = await Promise.allSettled(
      ports.map((port, i) => startProcess(port, clusterArgs, dirs[i] as string)),
    );
    children = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  const clusterOk = async (): Promise<void> => {
    for (const port of ports) {
      await waitFor(`cluster_state:ok on port ${port}`, async () =>
        (await rawCommand(port, 'CLUSTER INFO')).includes('cluster_state:ok'),
      );
    }
  };
  try {
    await onFreshPorts(async () => {
      ports = [];
      for (let i = 0; i < dirs.length; i++) ports.push(await freeClusterPort());
      await startAll().catch(async (error: unknown) => {
        await kill();
        for (const dir of dirs) rmSync(join(dir, 'nodes.conf'), { force: true });
        throw error;
      });
    });
    const created = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `${HOST}:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: CLUSTER_CREATE_TIMEOUT_MS },
    );
    if (created.error || created.status !== 0) {
      throw new Error(
        `redis-cli --cluster create failed: ${created.error?.message ?? created.stdout + created.stderr}`,
      );
    }
    await clusterOk();
  } catch (error) {
    await stop();
    throw error;
  }
  const nodes = ports.map((port) => ({ host: HOST, port }));
  /** `command`'s reply from the first node that answers (a killed node is skipped). */
  const askAny = async (command: string): Promise<string> => {
    let last: unknown;
    for (const port of ports) {
      try {
        return await rawCommand(port, command);
      } catch (error) {
        last = error;
      }
    }
    throw new Error(`no Redis Cluster node answered ${command}: ${(last as Error).message}`);
  };
  return {
    nodes,
    nodesEnv: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    stop,
    kill,
    restart: async () => {
      await kill();
      await startAll();
      await clusterOk();
    },
    signal: (port, signal) => {
      children[ports.indexOf(port)]?.kill(signal);
    },
    killNode: async (port) => {
      const child = children[ports.indexOf(port)];
      if (!child) throw new Error(`no Redis Cluster node on port ${port}`);
      child.kill('SIGKILL');
      await exited(child);
    },
    restartNode: async (port, args = []) => {
      const i = ports.indexOf(port);
      const child = children[i];
      if (!child) throw new Error(`no Redis Cluster node on port ${port}`);
      if (child.exitCode === null && child.signalCode === null)
        throw new Error(`the Redis Cluster node on port ${port} is still running`);
      children[i] = await startProcess(port, [...clusterArgs, ...args], dirs[i] as string);
    },
    topology: (port) =>
      (port === undefined ? askAny('CLUSTER NODES') : rawCommand(port, 'CLUSTER NODES')).then((reply) =>
        parseClusterNodes(bulkText(reply)),
      ),
    keySlot: async (key) => {
      if (/\s/.test(key))
        throw new Error(`a key with white space cannot be sent inline: ${JSON.stringify(key)}`);
      return Number((await askAny(`CLUSTER KEYSLOT ${key}`)).slice(1, -2));
    },
    inSync: (port) =>
      rawCommand(port, 'INFO replication').then(
        (reply) => reply.includes('role:slave') && reply.includes('master_link_status:up'),
        () => false,
      ),
    servesAsMaster: async (port) => {
      try {
        const [info, replication] = [
          await rawCommand(port, 'CLUSTER INFO'),
          await rawCommand(port, 'INFO replication'),
        ];
        return info.includes('cluster_state:ok') && replication.includes('role:master');
      } catch {
        return false;
      }
    },
  };
}

/** A primary, one replica and three sentinels (`redis-server --sentinel`) watching them. */
export interface RedisSentinelGroup {
  /** The master's name the sentinels know (`REDIS_SENTINEL_NAME`). */
  readonly name: string;
  /** `REDIS_SENTINELS` form: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3" */
  readonly sentinelsEnv: string;
  readonly sentinelPorts: readonly number[];
  /** The servers as started: `primary` first replicates to nobody, `replica` to it. */
  readonly primary: RedisServer;
  readonly replica: RedisServer;
  /** The master's port as a majority of the sentinels name it now. */
  masterPort(): Promise<number | undefined>;
  /** Whether the server on `port` is a replica whose link to its master is up. */
  inSync(port: number): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * Sentinels that declare a master down after 1 s without an answer and need two of three to
 * agree: a SIGKILLed primary is replaced within a few seconds.
 */
export async function startRedisSentinelGroup(name = 'sbmaster'): Promise<RedisSentinelGroup> {
  const primary = await startRedis();
  const replica = await startRedis({ args: ['--replicaof', HOST, String(primary.port)] });
  await waitFor('the replica in sync', async () =>
    (await rawCommand(replica.port, 'INFO replication')).includes('master_link_status:up'),
  );
  const dirs: string[] = [];
  const sentinels: ChildProcess[] = [];
  const ports: number[] = [];
  const stopSentinels = async (): Promise<void> => {
    for (const child of sentinels) child.kill('SIGKILL');
    await Promise.all(sentinels.map(exited));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await onFreshPorts(async () => {
        const candidate = await freePort();
        const dir = mkdtempSync(join(tmpdir(), 'sb-sentinel-'));
        dirs.push(dir);
        const conf = join(dir, 'sentinel.conf');
        writeFileSync(
          conf,
          [
            `port ${candidate}`,
            `bind ${HOST}`,
            `dir ${dir}`,
            `sentinel monitor ${name} ${HOST} ${primary.port} 2`,
            `sentinel down-after-milliseconds ${name} 1000`,
            `sentinel failover-timeout ${name} 4000`,
            '',
          ].join('\n'),
        );
        const started = spawn(redisServerBinary(), [conf, '--sentinel'], { cwd: dir, stdio: 'ignore' });
        started.on('error', () => undefined);
        sentinels.push(started);
        await waitFor(`sentinel on port ${candidate}`, async () => {
          if (started.exitCode !== null)
            throw new PortTakenError(`sentinel on port ${candidate} exited at start`);
          return (await rawCommand(candidate, 'PING')).startsWith('+PONG');
        });
        return candidate;
      });
      ports.push(port);
    }
    // Each sentinel has found the replica (through the primary) and the other sentinels.
    for (const port of ports) {
      await waitFor(`sentinel ${port} to know the replica and its peers`, async () => {
        const reply = await rawCommand(port, `SENTINEL MASTER ${name}`);
        const field = (key: string): number => {
          const lines = reply.split('\r\n');
          const at = lines.indexOf(key);
          return at < 0 ? 0 : Number(lines[at + 2]);
        };
        return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2;
      });
    }
  } catch (error) {
    await stopSentinels();
    await Promise.all([primary.stop(), replica.stop()]);
    throw error;
  }
  const masterPort = async (): Promise<number | undefined> => {
    const named = await Promise.all(
      ports.map((port) =>
        rawCommand(port, `SENTINEL GET-MASTER-ADDR-BY-NAME ${name}`).then(
          (reply) => Number(reply.split('\r\n')[4]) || undefined,
          () => undefined,
        ),
      ),
    );
    const counts = new Map<number, number>();
    for (const port of named) if (port) counts.set(port, (counts.get(port) ?? 0) + 1);
    return [...counts].find(([, count]) => count >= 2)?.[0];
  };
  return {
    name,
    sentinelsEnv: ports.map((port) => `${HOST}:${port}`).join(','),
    sentinelPorts: ports,
    primary,
    replica,
    masterPort,
    inSync: (port) =>
      rawCommand(port, 'INFO replication').then(
        (reply) => reply.includes('master_link_status:up'),
        () => false,
      ),
    stop: async () => {
      await stopSentinels();
      await Promise.all([primary.stop(), replica.stop()]);
    },
  };
}
