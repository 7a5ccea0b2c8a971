import type { Logger } from '@switchboard/core';
import { startAccountApi } from '@switchboard/account-api';
import { boot, onShutdownSignal, serveMetrics } from '../bootstrap';
import type { Env } from './index';

export interface AccountApiProcess {
  readonly port: number;
  readonly logger: Logger;
  /** Stops the HTTP server, then closes the engine and the metrics server. */
  stop(): Promise<void>;
}

/**
 * Starts the account API from the environment: config, logger, engine, seed keys (announced to
 * the gateways when they changed), listen, metrics. Resolves the running service, or an exit
 * code when it cannot start (1, with one line per problem on stderr for an invalid config).
 */
export async function startAccountApiProcess(env: Env): Promise<AccountApiProcess | number> {
  const runtime = await boot(env, 'account-api');
  if (!runtime) return 1;
  const { config, engine, metrics } = runtime;
  const logger = runtime.logger.child({ service: 'account-api' });
  try {
    const server = await startAccountApi({ engine, logger, config, ...(metrics ? { metrics } : {}) });
    const stopMetrics = await serveMetrics(runtime);
    logger.info({ port: server.port, host: config.host, engine: engine.kind }, 'ready');
    return {
      port: server.port,
      logger,
      stop: async () => {
        logger.info('stopping');
        await server.close();
        await engine.close();
        await stopMetrics();
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
  onShutdownSignal(started.logger, started.stop);
  return undefined;
}
