import {
  ConfigError,
  createEngine,
  createLogger,
  generateKeyRecord,
  createMetrics,
  loadConfig,
  seedKeys,
  startMetricsServer,
} from '@switchboard/core';
import type { Config, Engine, Logger, Metrics } from '@switchboard/core';
import type { Env } from './commands/index';

export interface Runtime {
  config: Config;
  logger: Logger;
  engine: Engine;
  /** Present when `METRICS_PORT` is set. */
  metrics: Metrics | undefined;
}

/** Loads the config (printing one line per problem on failure), the logger and the engine. */
export async function boot(env: Env, service: string): Promise<Runtime | undefined> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.problems.join('\n')}\n`);
    return undefined;
  }
  const logger = createLogger({ level: config.logLevel, nodeId: config.nodeId });
  logger.info(
    { service, engine: config.redis ? config.redis.kind : 'memory', pid: process.pid, node: process.version },
    'starting',
  );
  const engine = await createEngine(config, { logger });
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

/** Serves `/metrics` on `METRICS_PORT` when set; resolves the closer (a no-op otherwise). */
export async function serveMetrics(runtime: Runtime): Promise<() => Promise<void>> {
  const { metrics, config, logger } = runtime;
  if (!metrics || config.metricsPort === undefined) return async () => undefined;
  const server = await startMetricsServer(metrics, config.metricsPort, config.host);
  logger.info({ port: server.port, service: 'metrics' }, 'metrics ready');
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
      '',
    ].join('\n'),
  );
}

/** SIGTERM/SIGINT run `shutdown` once; a second signal exits at once. */
export function onShutdownSignal(logger: Logger, shutdown: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
