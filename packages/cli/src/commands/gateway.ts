import { createGateway } from '@switchboard/gateway';
import { runService, serveMetrics } from '../bootstrap';
import { listenOn } from '../listen';
import type { Env } from '../env';

/** `switchboard gateway`: one gateway node. It binds last, after the metrics port. */
export function runGateway(env: Env): Promise<number | undefined> {
  return runService(env, 'gateway', async (runtime, opened) => {
    const { config, logger, engine, metrics } = runtime;
    const stopMetrics = await serveMetrics(runtime, opened);
    const gateway = createGateway({ config, engine, logger, ...(metrics ? { metrics } : {}) });
    opened.add(() => gateway.close());
    await listenOn('PORT', config.host, config.port, () => gateway.listen());
    return {
      logger,
      stop: async () => {
        await gateway.drain();
        await gateway.close();
        await engine.close();
        await stopMetrics();
      },
    };
  });
}
