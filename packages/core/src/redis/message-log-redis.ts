import type { LogRecord, MessageLog } from '../logs/message-log';
import type { ApiKey } from '../types';
import { guard, LuaScript } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';

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

interface Batch {
  records: string[];
  waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }>;
}

/**
 * A capped LIST per key, newest at the head. Appends made in the same event-loop turn for one
 * key go out as one command (a busy node publishes many messages per turn); each `append`
 * still resolves only once its record is written, and order is kept.
 */
export class RedisMessageLog implements MessageLog {
  private readonly batches = new Map<ApiKey, Batch>();
  private scheduled = false;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  append(key: ApiKey, record: LogRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      let batch = this.batches.get(key);
      if (!batch) {
        batch = { records: [], waiters: [] };
        this.batches.set(key, batch);
      }
      batch.records.push(JSON.stringify(record));
      batch.waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }

  private flush(): void {
    this.scheduled = false;
    const batches = [...this.batches];
    this.batches.clear();
    for (const [key, { records, waiters }] of batches) {
      // Only the newest `capacity` records of a batch can survive the trim; the rest need not travel
      // (and Lua's unpack has a limit).
      const kept = records.slice(-Math.min(this.capacity, MAX_BATCH));
      guard(this.client, () =>
        logAppend.run(this.client, [this.keys.log(key)], [this.capacity, ...kept]),
      ).then(
        () => waiters.forEach((w) => w.resolve()),
        (error: unknown) => waiters.forEach((w) => w.reject(error)),
      );
    }
  }
}
