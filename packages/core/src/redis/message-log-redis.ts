import type { LogRecord, MessageLog } from '../logs/message-log';
import type { ApiKey } from '../types';
import { guard, LuaScript } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';
import { TurnBatches } from './turn-batches';

/**
 * KEYS[1] the key's log LIST; ARGV[1] capacity, ARGV[2..] records, oldest first.
 * LPUSH and LTRIM atomically in one command.
 */
const logAppend = new LuaScript(`
redis.call('LPUSH', KEYS[1], unpack(ARGV, 2))
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[1]) - 1)
return 1
`);

const MAX_BATCH = 1000;

/**
 * A capped LIST per key, newest at the head. Appends made in the same event-loop turn for one
 * key go out as one command (a busy node publishes many messages per turn); each `append`
 * still resolves only once its record is written, and order is kept.
 */
export class RedisMessageLog implements MessageLog {
  private readonly appends = new TurnBatches<ApiKey, string>(
    (key) => key,
    (key, records) => {
      // Only the newest `capacity` records of a batch can survive the trim; the rest need not
      // travel (and Lua's unpack has a limit).
      const kept = records.slice(-Math.min(this.capacity, MAX_BATCH));
      return guard(this.client, () =>
        logAppend.run(this.client, [this.keys.log(key)], [this.capacity, ...kept]),
      );
    },
  );

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  append(key: ApiKey, record: LogRecord): Promise<void> {
    return this.appends.add(key, JSON.stringify(record));
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }
}
