import type { LogRecord } from '../../src/logs/message-log';

/** A REST publish's log record whose id and message are `message` (one fixed timestamp). */
export const apiLogRecord = (message: string): LogRecord => ({
  id: message,
  channel: 'room',
  protocol: 'v3',
  source: 'api',
  message,
  timestamp: '2026-01-01T00:00:00.000Z',
});
