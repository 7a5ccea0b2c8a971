import type { Logger } from '@switchboard/core';
import { startAccountApi } from '@switchboard/account-api';
import { runService, serveMetrics, startService } from '../bootstrap';
import type { Runtime, Opened } from '../bootstrap';
import { listenOn } from '../listen';
import type { Env } from '../env';

export interface AccountApiProcess {
  readonly port: number;
  readonly logger: Logger;
  /** Stops the HTTP server, then closes the engine and the metrics server. */
  stop(): Promise<void>;
}

async function start(runtime: Runtime, opened: Opened): Promise<AccountApiProcess> {
  const { config, engine, metrics } = runtime;
  const logger = runtime.logger.child({ service: 'account-api' });
  const stopMetrics = await serveMetrics(runtime, opened);
  const server = await listenOn('ACCOUNT_PORT', config.host, config.accountPort, () =>
    startAccountApi({ engine, logger, config, ...(metrics ? { metrics } : {}) }),
  );
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
}

/**
 * Starts the account API from the environment: config, logger, engine, seed keys (announced to
 * the gateways when they changed), metrics, listen. Resolves the running service, or exit code 1
 * when it cannot start, with one line per problem on stderr (`startService`).
 */
export function startAccountApiProcess(env: Env): Promise<AccountApiProcess | number> {
  return startService(env, 'account-api', start);
}

/** `switchboard account-api`: serves until SIGTERM or SIGINT, then stops and exits 0. */
export function runAccountApi(env: Env): Promise<number | undefined> {
  return runService(env, 'account-api', start);
}
