import type { LogRecord, MessageLog } from '../logs/message-log';
import type { ApiKey } from '../types';
import { dismount, guard, rideNextWrite } from './clients';
import type { RedisClient } from './clients';
import type { RedisKeys } from './keys';

const MAX_BATCH = 1000;

/**
 * How far a LIST may grow past its capacity before it is trimmed back: one `LTRIM` per this many
 * appends instead of one per append (or a script per append to do both).
 */
const TRIM_SLACK = 100;

/**
 * Longest an append waits for other commands to leave with (see `RedisMessageLog`): a log read
 * on another node may miss a record this long; one on this node never does.
 */
const RIDE_MS = 10;

interface Batch {
  readonly records: Map<ApiKey, string[]>;
  readonly written: Promise<void>;
  settle(write: Promise<unknown>): void;
}

/**
 * A capped LIST per key, newest at the head. On a standalone server an append is written with
 * the connection's next batch of commands (a publish's script, usually the next publish's) or
 * after `RIDE_MS`, whichever comes first, so it costs no syscall and no reply of its own; the
 * records of one key waiting together go out as one `LPUSH`, in order. Each `append` resolves
 * only once its record is written. `recent` writes what waits first, so this node reads its
 * own appends. On a cluster appends go out at the end of the turn.
 *
 * The LIST holds up to `TRIM_SLACK` records more than the capacity between trims; `recent`
 * never reads past the capacity, so what a reader sees is the same.
 */
export class RedisMessageLog implements MessageLog {
  private batch: Batch | undefined;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly capacity = 500,
  ) {}

  append(key: ApiKey, record: LogRecord): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      batch = newBatch();
      this.batch = batch;
      if (rideNextWrite(this.client, this.flush)) this.deadline = setTimeout(this.flush, RIDE_MS);
    }
    const records = batch.records.get(key);
    if (records) records.push(JSON.stringify(record));
    else batch.records.set(key, [JSON.stringify(record)]);
    return batch.written;
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const count = Math.min(limit, this.capacity);
    if (count <= 0) return [];
    if (this.batch) {
      dismount(this.client, this.flush);
      this.flush();
    }
    const items = await guard(this.client, () => this.client.lrange(this.keys.log(key), 0, count - 1));
    return items.map((item) => JSON.parse(item) as LogRecord);
  }

  private readonly flush = (): void => {
    const batch = this.batch;
    if (!batch) return;
    this.batch = undefined;
    clearTimeout(this.deadline);
    this.deadline = undefined;
    dismount(this.client, this.flush);
    const writes: Promise<unknown>[] = [];
    for (const [key, records] of batch.records) writes.push(this.write(key, records));
    batch.settle(Promise.all(writes));
  };

  private async write(key: ApiKey, records: string[]): Promise<void> {
    // Only the newest `capacity` records of a batch can survive the trim; the rest need not travel.
    const kept = records.slice(-Math.min(this.capacity, MAX_BATCH));
    const list = this.keys.log(key);
    const length = await guard(this.client, () => this.client.lpush(list, ...kept));
    if (length > this.capacity + TRIM_SLACK) {
      await guard(this.client, () => this.client.ltrim(list, 0, this.capacity - 1));
    }
  }
}

function newBatch(): Batch {
  let settle!: (write: Promise<unknown>) => void;
  const written = new Promise<void>((resolve, reject) => {
    settle = (write) =>
      write.then(
        () => resolve(),
        (error: unknown) => reject(error ?? new Error('write failed')),
      );
  });
  return { records: new Map(), written, settle };
}
