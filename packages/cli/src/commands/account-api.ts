import { ConfigError, createEngine, createLogger, loadConfig, seedKeys } from '@switchboard/core';
import type { Config, Engine, Logger } from '@switchboard/core';
import { startAccountApi } from '@switchboard/account-api';
import type { Env } from './index';

export interface AccountApiProcess {
  readonly port: number;
  /** Stops the HTTP server, then closes the engine. */
  stop(): Promise<void>;
}

/**
 * Upserts `SWITCHBOARD_KEYS` and tells the gateways about every key that changed. Announcing is
 * best effort: gateways pick a change up within `KEY_CACHE_MS` anyway.
 */
async function applySeedKeys(
  engine: Engine,
  seeds: Parameters<typeof seedKeys>[1],
  logger: Logger,
): Promise<void> {
  const changed = await seedKeys(engine.keys, seeds);
  for (const key of changed) {
    await engine.broker.publishControl({ type: 'key-changed', key }).catch((error: unknown) => {
      logger.warn({ err: error, key }, 'could not announce a seeded key');
    });
  }
  if (seeds.length > 0) logger.info({ seeded: seeds.length, changed: changed.length }, 'seed keys applied');
}

/**
 * Starts the account API from the environment: config, logger, engine, seed keys, listen. Resolves
 * the running service, or an exit code when it cannot start (1, with one line per problem on
 * stderr for an invalid configuration).
 */
export async function startAccountApiProcess(env: Env): Promise<AccountApiProcess | number> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    error.problems.forEach((problem) => process.stderr.write(`${problem}\n`));
    return 1;
  }
  const logger = createLogger({ level: config.logLevel, nodeId: config.nodeId }).child({
    service: 'account-api',
  });
  let engine: Engine;
  try {
    engine = await createEngine(config, { logger });
  } catch (error) {
    logger.fatal({ err: error }, 'cannot open the engine');
    return 1;
  }
  try {
    await applySeedKeys(engine, config.seedKeys, logger);
    const server = await startAccountApi({ engine, logger, config });
    logger.info({ port: server.port, host: config.host, engine: engine.kind }, 'ready');
    return {
      port: server.port,
      stop: async () => {
        logger.info('stopping');
        await server.close();
        await engine.close();
        logger.info('stopped');
      },
    };
  } catch (error) {
    logger.fatal({ err: error }, 'cannot start the account API');
    await engine.close().catch(() => undefined);
    return 1;
  }
}

/** `switchboard account-api`: serves until SIGTERM or SIGINT, then stops and exits 0. */
export async function runAccountApi(env: Env): Promise<number | undefined> {
  const started = await startAccountApiProcess(env);
  if (typeof started === 'number') return started;
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    started.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return undefined;
}
