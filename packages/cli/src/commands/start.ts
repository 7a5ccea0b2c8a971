import { createGateway } from '@switchboard/gateway';
import { boot, ensureDevelopmentKey, onShutdownSignal } from '../bootstrap';
import type { Env } from './index';

/** `switchboard start` / `npm start`: the all-in-one process. */
export async function runStart(env: Env): Promise<number | undefined> {
  const runtime = await boot(env);
  if (!runtime) return 1;
  const { config, logger, engine } = runtime;
  const gateway = createGateway({ config, engine, logger });
  const port = await gateway.listen();
  await ensureDevelopmentKey(runtime, port);
  onShutdownSignal(logger, async () => {
    await gateway.drain();
    await gateway.close();
    await engine.close();
  });
  return undefined;
}
