import type { LogRecord, MessageLog } from '../logs/message-log';
import type { ApiKey } from '../types';
import { EngineUnavailableError } from '../errors';
import { guard } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';

/** A capped LIST per key, newest at the head: LPUSH and LTRIM in one MULTI. */
export class RedisMessageLog implements MessageLog {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  async append(key: ApiKey, record: LogRecord): Promise<void> {
    const list = this.keys.log(key);
    const results = await guard(this.client, () =>
      this.client
        .multi()
        .lpush(list, JSON.stringify(record))
        .ltrim(list, 0, this.capacity - 1)
        .exec(),
    );
    const failed = results?.find(([error]) => error);
    if (!results || failed) throw new EngineUnavailableError(failed?.[0] ?? new Error('MULTI aborted'));
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }
}
