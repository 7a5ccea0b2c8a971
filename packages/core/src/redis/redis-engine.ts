import type { Config } from '../config/load';
import type { Engine } from '../engine';
import type { Logger } from '../logger';

/** Placeholder until the Redis implementations land (issue: horizontal scale through Redis). */
export async function createRedisEngine(_config: Config, _logger: Logger): Promise<Engine> {
  throw new Error('The Redis engine is not available yet; unset REDIS_URL to use the in-memory engine');
}
