import { createGateway } from '@switchboard/gateway';
import { boot, onShutdownSignal, serveMetrics } from '../bootstrap';
import type { Env } from './index';

/** `switchboard gateway`: one gateway node. */
export async function runGateway(env: Env): Promise<number | undefined> {
  const runtime = await boot(env, 'gateway');
  if (!runtime) return 1;
  const { config, logger, engine, metrics } = runtime;
  const gateway = createGateway({ config, engine, logger, ...(metrics ? { metrics } : {}) });
  await gateway.listen();
  const stopMetrics = await serveMetrics(runtime);
  onShutdownSignal(logger, async () => {
    await gateway.drain();
    await gateway.close();
    await engine.close();
    await stopMetrics();
  });
  return undefined;
}
