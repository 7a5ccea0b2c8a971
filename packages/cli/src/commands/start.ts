import { startAccountApi } from '@switchboard/account-api';
import { createGateway } from '@switchboard/gateway';
import { ensureDevelopmentKey, runService, serveMetrics } from '../bootstrap';
import { listenOn } from '../listen';
import type { Env } from '../env';

/**
 * `switchboard start` / `npm start`: a gateway and the account API in one process, one engine.
 * The gateway binds last: a failure before it leaves nothing in the cluster's node registry.
 */
export function runStart(env: Env): Promise<number | undefined> {
  return runService(env, 'all-in-one', async (runtime, opened) => {
    const { config, logger, engine, metrics } = runtime;
    const stopMetrics = await serveMetrics(runtime, opened);
    const accountApi = await listenOn('ACCOUNT_PORT', config.host, config.accountPort, () =>
      startAccountApi({ config, engine, logger: logger.child({ service: 'account-api' }) }),
    );
    opened.add(() => accountApi.close());
    logger.info({ port: accountApi.port, service: 'account-api' }, 'ready');
    const gateway = createGateway({ config, engine, logger, ...(metrics ? { metrics } : {}) });
    opened.add(() => gateway.close());
    const port = await listenOn('PORT', config.host, config.port, () => gateway.listen());
    await ensureDevelopmentKey(runtime, port, accountApi.port);
    return {
      logger,
      stop: async () => {
        await gateway.drain();
        await accountApi.close();
        await gateway.close();
        await engine.close();
        await stopMetrics();
      },
    };
  });
}
