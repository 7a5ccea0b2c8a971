import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '@switchboard/core';
import { startSwitchboardProcess } from '@switchboard/harness';
import type { SwitchboardProcess } from '@switchboard/harness';

/** A gateway node as a real child process, so it can be SIGKILLed or SIGTERMed. */
export interface NodeProcess {
  readonly id: string;
  readonly port: number;
  readonly proc: SwitchboardProcess;
  readonly httpUrl: string;
  wsUrl(path: string, query: Record<string, string>): string;
}

export const testKey = (): ApiKeyRecord => ({
  key: `k${randomBytes(6).toString('hex')}`,
  secret: randomBytes(16).toString('hex'),
  domains: [],
  clientMessages: true,
  forceAuth: false,
  createdAt: new Date().toISOString(),
});

export async function startNodeProcess(
  env: Record<string, string>,
  id = `n-${randomBytes(3).toString('hex')}`,
): Promise<NodeProcess> {
  const proc = startSwitchboardProcess(['gateway'], {
    PORT: '0',
    HOST: '127.0.0.1',
    NODE_ID: id,
    KEY_CACHE_MS: '0',
    ...env,
  });
  const ready = await proc.waitForLog({ msg: 'ready' });
  const port = Number(ready['port']);
  return {
    id,
    port,
    proc,
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: (path, query) => `ws://127.0.0.1:${port}${path}?${new URLSearchParams(query).toString()}`,
  };
}
