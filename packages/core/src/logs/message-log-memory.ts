import type { ApiKey } from '../types';
import type { LogRecord, MessageLog } from './message-log';

export class MemoryMessageLog implements MessageLog {
  /** Oldest first; appends are O(1) and trimming drops from the front in batches. */
  private readonly logs = new Map<ApiKey, LogRecord[]>();

  constructor(private readonly capacity = 500) {}

  async append(key: ApiKey, record: LogRecord): Promise<void> {
    const log = this.logs.get(key) ?? [];
    log.push(record);
    if (log.length >= this.capacity * 2) log.splice(0, log.length - this.capacity);
    this.logs.set(key, log);
  }

  async recent(key: ApiKey, limit = this.capacity): Promise<LogRecord[]> {
    const log = this.logs.get(key) ?? [];
    return log.slice(-Math.min(limit, this.capacity)).reverse();
  }
}
