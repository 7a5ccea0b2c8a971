import pino from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/**
 * The one root logger. Levels: `fatal` the process exits; `error` a request or event was lost;
 * `warn` degraded but serving (Redis lost, node declared dead); `info` lifecycle (start, ready,
 * drain); `debug` per request; `trace` per frame. Secrets are redacted wherever they appear.
 */
export function createLogger(
  options: { level: string; nodeId?: string },
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level: options.level,
      base: options.nodeId ? { nodeId: options.nodeId } : {},
      redact: {
        paths: [
          'secret',
          '*.secret',
          '*.*.secret',
          'jwt',
          '*.jwt',
          'headers.secret',
          'headers.jwt',
          'authorization',
        ],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
