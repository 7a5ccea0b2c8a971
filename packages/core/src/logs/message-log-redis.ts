import type { LogRecord, MessageLog } from './message-log';
import type { ApiKey } from '../types';
import { guard } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';
import { TurnBatches } from '../redis/turn-batches';

const MAX_BATCH = 1000;

/**
 * How far a LIST may grow past its capacity before it is trimmed back: one `LTRIM` per this many
 * appends instead of one per append (or a script per append to do both).
 */
const TRIM_SLACK = 100;

/** A log append made by another command (the publish script): LPUSH, and LTRIM past `trimAbove`. */
export interface LogAppend {
  readonly list: string;
  /** The record's JSON. */
  readonly record: string;
  /** The LIST's length past which it is trimmed back to `trimTo` records. */
  readonly trimAbove: number;
  readonly trimTo: number;
}

/**
 * A capped LIST per key, newest at the head. Appends made in the same event-loop turn for one
 * key go out as one `LPUSH` (a busy node publishes many messages per turn); each `append`
 * still resolves only once its record is written, and order is kept. The LIST holds up to
 * `TRIM_SLACK` records more than the capacity between trims; `recent` never reads past the
 * capacity, so what a reader sees is the same.
 */
export class RedisMessageLog implements MessageLog {
  private readonly appends = new TurnBatches<ApiKey, string>(
    (key) => key,
    async (key, records) => {
      // Only the newest `capacity` records of a batch can survive the trim; the rest need not travel.
      const kept = records.slice(-Math.min(this.capacity, MAX_BATCH));
      const list = this.keys.log(key);
      const length = await guard(this.client, () => this.client.lpush(list, ...kept));
      if (length > this.capacity + TRIM_SLACK) {
        await guard(this.client, () => this.client.ltrim(list, 0, this.capacity - 1));
      }
    },
  );

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  append(key: ApiKey, record: LogRecord): Promise<void> {
    return this.appends.add(key, recordJson(record));
  }

  /**
   * The same append, made by the publish script instead (`RedisBroker.publish`'s `log`): the
   * record goes out with the publication, in its command. Standalone servers only (the log key
   * and the topic's keys are in different slots on a cluster).
   */
  ridingAppend(key: ApiKey, record: LogRecord): LogAppend {
    return {
      list: this.keys.log(key),
      record: recordJson(record),
      trimAbove: this.capacity + TRIM_SLACK,
      trimTo: this.capacity,
    };
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }
}

/**
 * A record's JSON, as `JSON.stringify` writes it. A REST publish's record (no optional field) is
 * written field by field: the fields' names and the uuid, protocol, source and timestamp need no
 * escaping, and skipping the generic object walk halves its cost on every publish.
 */
export function recordJson(record: LogRecord): string {
  const { binary, uuid, user } = record;
  if (binary !== undefined || uuid !== undefined || user !== undefined) return JSON.stringify(record);
  return `{"id":"${record.id}","channel":${JSON.stringify(record.channel)},"protocol":"${record.protocol}","source":"${record.source}","message":${JSON.stringify(record.message)},"timestamp":"${record.timestamp}"}`;
}
