import { accessSync, constants, mkdirSync } from 'node:fs';
import { inspect } from 'node:util';
import {
  ConfigError,
  EngineUnavailableError,
  SetupError,
  createLogger,
  fileSystemReason,
  generateKeyRecord,
  createMetrics,
  loadConfig,
  seedKeys,
  startMetricsServer,
} from '@switchboard/core';
import { createEngine } from './engine';
import type { Config, Engine, Logger, Metrics } from '@switchboard/core';
import type { Env } from './env';
import { listenOn } from './listen';

export interface Runtime {
  config: Config;
  logger: Logger;
  engine: Engine;
  /** Present when `METRICS_PORT` is set. */
  metrics: Metrics | undefined;
}

/** What a command has opened so far; closed newest first when a later step of its start fails. */
export class Opened {
  private readonly closers: (() => Promise<void>)[] = [];

  add(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  async closeAll(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await close().catch(() => undefined);
  }
}

/** A started server command: its logger and how SIGTERM or SIGINT stops it. */
export interface Service {
  readonly logger: Logger;
  stop(): Promise<void>;
}

/**
 * Starts a server command, all or nothing. When a step fails (the configuration, the data
 * directory, the keys file, a port) whatever was opened before is closed, stderr gets one line
 * naming the cause and the fix (one line per problem for an invalid configuration; the stack
 * trace follows at `LOG_LEVEL=debug`), and the result is exit code 1.
 */
export async function startService<T extends Service>(
  env: Env,
  service: string,
  start: (runtime: Runtime, opened: Opened) => Promise<T>,
): Promise<T | number> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.problems.join('\n')}\n`);
    return 1;
  }
  const opened = new Opened();
  try {
    return await start(await boot(config, service, opened), opened);
  } catch (error) {
    await opened.closeAll();
    const line =
      error instanceof SetupError
        ? error.message
        : error instanceof EngineUnavailableError && config.redis
          ? redisUnreachable(config.redis)
          : `cannot start the ${service} service: ${error instanceof Error ? error.message : String(error)} (LOG_LEVEL=debug prints the stack trace)`;
    process.stderr.write(`${line}\n`);
    if (config.logLevel === 'debug' || config.logLevel === 'trace')
      process.stderr.write(`${inspect(error)}\n`);
    return 1;
  }
}

/**
 * A server starts while Redis is down (it serves `unavailable` until Redis answers), unless the
 * start itself needs Redis: writing `SWITCHBOARD_KEYS`, or the first-start key check of `start`.
 */
function redisUnreachable(redis: NonNullable<Config['redis']>): string {
  if (redis.kind === 'cluster') {
    const nodes = redis.nodes.map((node) => `${node.host}:${node.port}`).join(',');
    return `Redis Cluster at ${nodes} (REDIS_CLUSTER_NODES) is unreachable: start it, or set REDIS_CLUSTER_NODES to nodes that answer`;
  }
  if (redis.kind === 'sentinel') {
    const sentinels = redis.sentinels.map((node) => `${node.host}:${node.port}`).join(',');
    return `Redis master ${redis.name} (REDIS_SENTINEL_NAME) of the sentinels at ${sentinels} (REDIS_SENTINELS) is unreachable: start them, or set REDIS_SENTINELS to sentinels that answer`;
  }
  let where = 'REDIS_URL';
  try {
    where = new URL(redis.url).host; // never the password
  } catch {
    // Not a URL the WHATWG parser takes: name the variable only.
  }
  return `Redis at ${where} (REDIS_URL) is unreachable: start it, or set REDIS_URL to a server that answers`;
}

/** `startService`, then serve until SIGTERM or SIGINT stops the service and the process exits. */
export async function runService<T extends Service>(
  env: Env,
  service: string,
  start: (runtime: Runtime, opened: Opened) => Promise<T>,
): Promise<number | undefined> {
  // Listening for signals before anything starts: a SIGTERM that arrives right after the
  // `ready` line (a supervisor, a test) still drains and exits 0 instead of killing the process.
  const starting = startService(env, service, start);
  const stopping = onShutdownSignal(async (signal) => {
    const started = await starting;
    if (typeof started === 'number') return started;
    started.logger.info({ signal }, 'shutting down');
    await started.stop();
    return 0;
  });
  const started = await starting;
  if (typeof started === 'number') {
    stopping.cancel();
    return started;
  }
  return undefined;
}

/** The logger, the engine (checked before any port opens), the seed keys and the metrics. */
async function boot(config: Config, service: string, opened: Opened): Promise<Runtime> {
  const logger = createLogger({ level: config.logLevel, nodeId: config.nodeId });
  logger.info(
    { service, engine: config.redis ? config.redis.kind : 'memory', pid: process.pid, node: process.version },
    'starting',
  );
  if (!config.redis) prepareDataDir(config.dataDir);
  const engine = await createEngine(config, { logger });
  opened.add(() => engine.close());
  // Reads the memory engine's keys file now, so a damaged one stops the start here.
  if (engine.kind === 'memory') await engine.keys.list();
  // Seeded keys that changed are announced so running nodes drop their cached records at once.
  const changed = await seedKeys(engine.keys, config.seedKeys);
  for (const key of changed) {
    await engine.broker.publishControl({ type: 'key-changed', key }).catch(() => undefined);
  }
  if (config.seedKeys.length > 0) {
    logger.info({ seeded: config.seedKeys.length, changed: changed.length }, 'seed keys applied');
  }
  const metrics =
    config.metricsPort === undefined ? undefined : createMetrics({ service, nodeId: config.nodeId });
  return { config, logger, engine, metrics };
}

/**
 * The in-memory engine keeps its keys in the data directory, written on the first start (the
 * development key), at every changed seed key and by `switchboard keys`: it must be writable
 * before anything listens, even when today's start would write nothing.
 */
function prepareDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw new SetupError(
      `cannot write to the data directory ${dir} (SWITCHBOARD_DATA_DIR): ${fileSystemReason(error)}: make it writable by the user running Switchboard, or set SWITCHBOARD_DATA_DIR to another directory`,
      { cause: error },
    );
  }
}

/** Serves `/metrics` on `METRICS_HOST`:`METRICS_PORT` when the port is set; resolves the closer (a no-op otherwise). */
export async function serveMetrics(runtime: Runtime, opened: Opened): Promise<() => Promise<void>> {
  const { metrics, config, logger } = runtime;
  if (!metrics || config.metricsPort === undefined) return async () => undefined;
  const port = config.metricsPort;
  const host = config.metricsHost;
  const hostVariable = host === config.host ? 'HOST' : 'METRICS_HOST';
  const server = await listenOn(
    'METRICS_PORT',
    host,
    port,
    () => startMetricsServer(metrics, port, host),
    hostVariable,
  );
  opened.add(() => server.close());
  logger.info({ host, port: server.port, service: 'metrics' }, 'metrics ready');
  return () => server.close();
}

/** First start with no keys: create a development key and print it once, with a tour. */
export async function ensureDevelopmentKey(
  runtime: Runtime,
  port: number,
  accountPort: number,
): Promise<void> {
  if ((await runtime.engine.keys.list()).length > 0) return;
  const record = generateKeyRecord();
  await runtime.engine.keys.put(record);
  const base = `localhost:${port}`;
  const where = runtime.engine.kind === 'memory' ? ` (stored in ${runtime.config.dataDir}/keys.json)` : '';
  process.stdout.write(
    [
      '',
      `Created a development API key${where}. The secret is shown only now:`,
      `  key:    ${record.key}`,
      `  secret: ${record.secret}`,
      '',
      'Connect a client:',
      `  npx wscat -c "ws://${base}/v3/room-1?api_key=${record.key}&presence=1&user=alice"`,
      'Publish from a backend:',
      `  curl -s ${base}/api/publish -H 'content-type: application/json' \\`,
      `    -d '{"key":"${record.key}","secret":"${record.secret}","channel":"room-1","message":{"event":"hello","data":"world"}}'`,
      'Ask the account API:',
      `  curl -s localhost:${accountPort}/api/connections -H 'key: ${record.key}' -H 'secret: ${record.secret}'`,
      'Or look in the web console (sign in with the key and secret above):',
      `  http://localhost:${accountPort}/`,
      '',
    ].join('\n'),
  );
}

/**
 * Under `npm start` in a terminal, one Ctrl-C arrives twice within milliseconds: the terminal
 * signals its whole foreground process group, and npm forwards the signal it got. A repeat of the
 * same signal this soon is that one request, not a second one.
 */
const REPEAT_MS = 1000;

/**
 * SIGTERM/SIGINT run `shutdown` once, then exit with the code it resolves; a second signal exits
 * 1 at once. `cancel` stops listening (a start that failed exits by itself).
 */
export function onShutdownSignal(shutdown: (signal: NodeJS.Signals) => Promise<number>): { cancel(): void } {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const handle = (signal: NodeJS.Signals): void => {
    if (first) {
      if (signal === first.signal && Date.now() - first.at < REPEAT_MS) return;
      process.exit(1);
    }
    first = { signal, at: Date.now() };
    shutdown(signal).then(
      (code) => process.exit(code),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
  return {
    cancel() {
      process.off('SIGTERM', handle);
      process.off('SIGINT', handle);
    },
  };
}
