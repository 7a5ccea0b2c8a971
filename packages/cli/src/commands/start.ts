import { startAccountApi } from '@switchboard/account-api';
import { createGateway } from '@switchboard/gateway';
import { boot, ensureDevelopmentKey, onShutdownSignal, serveMetrics } from '../bootstrap';
import type { Env } from './index';

/** `switchboard start` / `npm start`: a gateway and the account API in one process, one engine. */
export async function runStart(env: Env): Promise<number | undefined> {
  const runtime = await boot(env, 'all-in-one');
  if (!runtime) return 1;
  const { config, logger, engine, metrics } = runtime;
  const gateway = createGateway({ config, engine, logger, ...(metrics ? { metrics } : {}) });
  const port = await gateway.listen();
  const accountApi = await startAccountApi({
    config,
    engine,
    logger: logger.child({ service: 'account-api' }),
  });
  logger.info({ port: accountApi.port, service: 'account-api' }, 'ready');
  const stopMetrics = await serveMetrics(runtime);
  await ensureDevelopmentKey(runtime, port, accountApi.port);
  onShutdownSignal(logger, async () => {
    await gateway.drain();
    await accountApi.close();
    await gateway.close();
    await engine.close();
    await stopMetrics();
  });
  return undefined;
}
