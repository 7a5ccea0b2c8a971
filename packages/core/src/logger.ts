import pino from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/** Words that make a field or query parameter a credential, wherever it is and however nested. */
const CREDENTIAL = '[A-Za-z0-9_.-]*(?:secret|jwt|password|passwd|token|authorization|cookie)[A-Za-z0-9_.-]*';
const CENSOR = '[redacted]';

const REDACTIONS: ReadonlyArray<readonly [RegExp, string]> = [
  // A JSON field: `"secret":"…"`, `"x-jwt":123`, at any depth (the line is JSON).
  [
    new RegExp(`("${CREDENTIAL}":)(?:"(?:[^"\\\\]|\\\\.)*"|-?[0-9][0-9.eE+-]*|true|false)`, 'gi'),
    `$1"${CENSOR}"`,
  ],
  // A field name followed by its value in an array, as Redis commands carry them: `"secret","…"`.
  [new RegExp(`("${CREDENTIAL}",)"(?:[^"\\\\]|\\\\.)*"(?!\\s*:)`, 'gi'), `$1"${CENSOR}"`],
  // The same inside a string holding JSON (a body or an error message): `\"secret\":\"…\"`.
  [new RegExp(`(\\\\"${CREDENTIAL}\\\\":\\s*)\\\\"(?:[^"\\\\]|\\\\[^"])*\\\\"`, 'gi'), `$1\\"${CENSOR}\\"`],
  // A query parameter in a URL or query string: `?jwt=…`, `&secret=…`.
  [new RegExp(`([?&;]${CREDENTIAL}=)[^&#\\s"\\\\]*`, 'gi'), `$1${CENSOR}`],
  // A JWT, wherever it appears (header `eyJ…`, payload `eyJ…`, signature).
  [/eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, CENSOR],
  // The password of a URL's user information: `redis://user:password@host`.
  [/([a-z][a-z0-9+.-]*:\/\/[^\s:/@"]*:)[^\s@/"]+@/gi, `$1${CENSOR}@`],
];

const MAYBE_SENSITIVE = /secret|jwt|passw|token|authoriz|cookie|eyJ|:\/\/[^\s"/]*@/i;

/** One serialized log line with every credential replaced by `[redacted]`. */
export function redactLogLine(line: string): string {
  if (!MAYBE_SENSITIVE.test(line)) return line;
  return REDACTIONS.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), line);
}

type Destination = pino.DestinationStream & {
  flush?(callback?: (error?: Error) => void): void;
  flushSync?(): void;
};

/** `destination` behind `redactLogLine`; pino writes one whole line per `write`. */
function redacting(destination: Destination): Destination {
  const wrapped: Destination = { write: (line: string) => destination.write(redactLogLine(line)) };
  if (destination.flush) wrapped.flush = (callback) => destination.flush?.(callback);
  if (destination.flushSync) wrapped.flushSync = () => destination.flushSync?.();
  return wrapped;
}

/**
 * The one root logger. Levels: `fatal` the process exits; `error` a request or event was lost;
 * `warn` degraded but serving (Redis lost, node declared dead); `info` lifecycle (start, ready,
 * drain); `debug` per request; `trace` per frame.
 *
 * Credentials never reach the output (docs/operations.md, "Logs"): every serialized line passes
 * `redactLogLine`, which replaces the values of fields and query parameters named like a secret,
 * a JWT, a password, a token or an authorization (at any depth, inside error messages and URLs
 * too), any JWT-shaped token, and URL passwords. API keys are not redacted: they are public (they
 * travel in client URLs) and they are what an operator searches logs by.
 */
export function createLogger(
  options: { level: string; nodeId?: string },
  destination?: pino.DestinationStream,
): Logger {
  return pino(
    {
      level: options.level,
      base: options.nodeId ? { nodeId: options.nodeId } : {},
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    redacting(destination ?? pino.destination({ dest: 1, sync: true })),
  );
}
