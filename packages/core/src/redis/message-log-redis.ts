import type { LogRecord, MessageLog } from '../logs/message-log';
import type { ApiKey } from '../types';
import { guard, LuaScript } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';

/**
 * KEYS[1] the key's log LIST; ARGV[1] the record, ARGV[2] capacity.
 * LPUSH and LTRIM atomically in one command (a MULTI costs four commands per publish).
 */
const logAppend = new LuaScript(`
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 1
`);

/** A capped LIST per key, newest at the head. */
export class RedisMessageLog implements MessageLog {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  async append(key: ApiKey, record: LogRecord): Promise<void> {
    await guard(this.client, () =>
      logAppend.run(this.client, [this.keys.log(key)], [JSON.stringify(record), this.capacity]),
    );
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }
}
