import { join } from 'node:path';
import { product } from './procs';

/** The slice of the product's core package the benchmark uses (loaded from the product under test). */
interface CoreModule<E> {
  loadConfig(env: Record<string, string>): unknown;
  createLogger(options: { level: string }): unknown;
  /** Products from before the engine choice moved to the composition root (the CLI). */
  createEngine?(config: unknown, deps: { logger: unknown }): Promise<E>;
  createRedisEngine(config: unknown, logger: unknown): Promise<E>;
}

/**
 * An engine of the product under test (`--product-dir`), built from its own core package with
 * `env` (which names its Redis) as its configuration and a silent logger. `E` is the slice of
 * the engine the caller uses.
 */
export function openProductEngine<E>(env: Record<string, string>): Promise<E> {
  const core = require(join(product.dir, 'packages', 'core', 'dist', 'index.js')) as CoreModule<E>;
  const config = core.loadConfig({ LOG_LEVEL: 'silent', ...env });
  const logger = core.createLogger({ level: 'silent' });
  if (core.createEngine) return core.createEngine(config, { logger });
  return core.createRedisEngine(config, logger);
}

interface PresenceEngine {
  presence: {
    join(
      topic: { key: string; protocol: 'v3' | 'v4'; channel: string },
      entry: { connId: string; nodeId: string; member: { uuid: string; user?: string } },
      now: number,
    ): Promise<unknown>;
  };
  close(): Promise<void>;
}

/**
 * Fills a V4 channel's presence through the product's own `PresenceStore` (the Lua script a
 * gateway runs on a join), as node `bench-filler`. Joining 10,000 sockets to one channel instead
 * would send ~50 million `member_joined` frames (each join goes to every member), which measures
 * nothing useful here.
 */
export async function fillPresence(
  redisUrl: string,
  prefix: string,
  key: string,
  channel: string,
  count: number,
): Promise<void> {
  const engine = await openProductEngine<PresenceEngine>({
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    NODE_ID: 'bench-filler',
  });
  try {
    const topic = { key, protocol: 'v4' as const, channel };
    const now = performance.timeOrigin + performance.now();
    for (let i = 0; i < count; i += 250) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < Math.min(count, i + 250); j++) {
        batch.push(
          engine.presence.join(
            topic,
            {
              connId: `bench-filler/${j}`,
              nodeId: 'bench-filler',
              member: { uuid: `uuid-${j}`, user: `user-${j}` },
            },
            now + j,
          ),
        );
      }
      await Promise.all(batch);
    }
  } finally {
    await engine.close();
  }
}
