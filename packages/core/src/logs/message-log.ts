import type { ApiKey, ChannelName, JsonValue, Protocol } from '../types';

/** One logged message, as `/api/logs` returns it (docs/account-api.md). */
export interface LogRecord {
  /** A uuid (`randomUUID`): written into the stored JSON as it is (`recordJson`). */
  readonly id: string;
  readonly channel: ChannelName;
  readonly protocol: Protocol;
  readonly source: 'api' | 'client';
  /** The message text exactly as delivered (base64 for a V3 binary frame, see `binary`). */
  readonly message: string;
  readonly binary?: true;
  readonly uuid?: string;
  readonly user?: JsonValue;
  /** ISO 8601 */
  readonly timestamp: string;
}

/**
 * MessageLog: the most recent messages of each API key (publishes and relayed client messages).
 *
 * Contract, for every implementation:
 * - Keeps at most `capacity` records per key (the implementation's constructor takes it; 500 by
 *   default), dropping the oldest.
 * - `recent` returns newest first; records of one key are never visible through another.
 * - Failures reject with `EngineUnavailableError`.
 */
export interface MessageLog {
  append(key: ApiKey, record: LogRecord): Promise<void>;
  recent(key: ApiKey, limit?: number): Promise<LogRecord[]>;
}
