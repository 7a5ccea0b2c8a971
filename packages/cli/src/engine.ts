import { join } from 'node:path';
import { createMemoryEngine, createMemoryState, createRedisEngine } from '@switchboard/core';
import type { Config, Engine, Logger, MemoryState } from '@switchboard/core';

export interface EngineDeps {
  logger: Logger;
  /** Memory engine only: share state with other services of this process. */
  memoryState?: MemoryState;
}

/**
 * The one place an engine implementation is chosen, by the composition root: Redis when
 * configured, memory otherwise. Core builds either and knows of no choice.
 */
export async function createEngine(config: Config, deps: EngineDeps): Promise<Engine> {
  if (config.redis) {
    return createRedisEngine(config, deps.logger);
  }
  const state =
    deps.memoryState ??
    createMemoryState({
      logSize: config.limits.logSize,
      keysFile: join(config.dataDir, 'keys.json'),
      historyTtlSeconds: config.history.ttlSeconds,
      webhookQueue: { maxEvents: config.webhooks.queueMaxEvents, maxBytes: config.webhooks.queueMaxBytes },
    });
  return createMemoryEngine(state);
}
