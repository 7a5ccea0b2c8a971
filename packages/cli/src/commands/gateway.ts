import { createGateway } from '@switchboard/gateway';
import { boot, onShutdownSignal } from '../bootstrap';
import type { Env } from './index';

/** `switchboard gateway`: one gateway node. */
export async function runGateway(env: Env): Promise<number | undefined> {
  const runtime = await boot(env);
  if (!runtime) return 1;
  const { config, logger, engine } = runtime;
  const gateway = createGateway({ config, engine, logger });
  await gateway.listen();
  onShutdownSignal(logger, async () => {
    await gateway.drain();
    await gateway.close();
    await engine.close();
  });
  return undefined;
}
