import { join } from 'node:path';
import { product } from './procs';

/** The slice of the product's core package the benchmark uses (loaded from the product under test). */
interface CoreModule {
  loadConfig(env: Record<string, string>): unknown;
  createLogger(options: { level: string }): unknown;
  createEngine(
    config: unknown,
    deps: { logger: unknown },
  ): Promise<{
    presence: {
      join(
        topic: { key: string; protocol: 'v3' | 'v4'; channel: string },
        entry: { connId: string; nodeId: string; member: { uuid: string; user?: string } },
        now: number,
      ): Promise<unknown>;
    };
    close(): Promise<void>;
  }>;
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
  const core = require(join(product.dir, 'packages', 'core', 'dist', 'index.js')) as CoreModule;
  const config = core.loadConfig({
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    NODE_ID: 'bench-filler',
    LOG_LEVEL: 'silent',
  });
  const engine = await core.createEngine(config, { logger: core.createLogger({ level: 'silent' }) });
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
