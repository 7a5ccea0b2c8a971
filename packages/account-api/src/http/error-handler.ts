import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, EngineUnavailableError, HTTP_ERRORS } from '@switchboard/core';
import type { HttpErrorCode, Logger } from '@switchboard/core';

/** The body of every error response: a text a person can act on and a stable catalog code. */
export interface ErrorBody {
  error: string;
  code: string;
}

/** Not in the catalog on purpose: it is never a client's mistake, and its details stay in the log. */
const INTERNAL: ErrorBody = { error: 'Internal server error', code: 'SB_INTERNAL' };

/** Express's own client errors (`http-errors`, e.g. a malformed URL or JSON body) carry a 4xx status. */
function clientStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** Their own texts may describe internals, so the catalog's text for the status is sent instead. */
function clientErrorBody(status: number): ErrorBody {
  const code: HttpErrorCode | undefined =
    status === 404
      ? 'SB_NOT_FOUND'
      : status === 405
        ? 'SB_METHOD_NOT_ALLOWED'
        : status === 413
          ? 'SB_PAYLOAD_TOO_LARGE'
          : undefined;
  return code
    ? { error: HTTP_ERRORS[code].message, code }
    : { error: 'Bad request', code: 'SB_INVALID_FIELD' };
}

/**
 * The one place errors become responses: `AppError` → its status and `{error, code}`; an
 * unreachable engine → 503; anything else → 500 with a generic text (logged, never sent).
 * Never a stack trace, never an HTML page.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    let status: number;
    let body: ErrorBody;
    if (error instanceof AppError) {
      status = error.status;
      body = { error: error.message, code: error.code };
      if (error.retryAfterSeconds !== undefined) res.set('Retry-After', String(error.retryAfterSeconds));
      if (error instanceof EngineUnavailableError) {
        logger.warn({ method: req.method, path: req.path, err: error.cause }, 'engine unavailable');
      }
    } else if ((error as { type?: unknown } | null)?.type === 'entity.parse.failed') {
      status = 400;
      body = { error: 'Request body is not valid JSON; send a JSON object', code: 'SB_BAD_JSON' };
    } else if (clientStatus(error) !== undefined) {
      status = clientStatus(error) ?? 400;
      body = clientErrorBody(status);
    } else {
      status = 500;
      body = INTERNAL;
      logger.error({ method: req.method, path: req.path, err: error }, 'request failed');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status).json(body);
  };
}

/** Unknown paths: 404 JSON, whatever the method. */
export const notFound: RequestHandler = (req) => {
  throw new AppError('SB_NOT_FOUND', `Not found: ${req.method} ${shorten(req.baseUrl + req.path)}`);
};

/** Paths are echoed in messages, but not at any length. */
const shorten = (path: string): string => (path.length > 200 ? `${path.slice(0, 200)}…` : path);

/** A known path with a method it does not serve: 405 with `Allow`. */
export const methodNotAllowed =
  (allow: readonly string[]): RequestHandler =>
  (req, res) => {
    res.set('Allow', allow.join(', '));
    throw new AppError(
      'SB_METHOD_NOT_ALLOWED',
      `Method ${req.method} not allowed on ${shorten(req.baseUrl + req.path)}; use ${allow.join(' or ')}`,
    );
  };
