/**
 * Answers of the Pusher HTTP API when a request is refused (docs/pusher.md, "HTTP API"). Pusher's
 * API answers errors with a status and a plain-text explanation; the server SDKs surface both
 * (`RequestError.status`, `.body`). Statuses: 400 malformed request, 401 authentication, 403 app
 * disabled or over its message quota, 404 unknown app or route, 413 body or event data too large.
 */
export interface PusherHttpError {
  readonly status: 400 | 401 | 403 | 404 | 405 | 413 | 429;
  readonly body: string;
}

export const PUSHER_HTTP_CONTENT_TYPE_ERROR = 'text/plain; charset=utf-8';

export const badRequest = (body: string): PusherHttpError => ({ status: 400, body });
export const unauthorized = (body: string): PusherHttpError => ({ status: 401, body });
export const forbidden = (body: string): PusherHttpError => ({ status: 403, body });
export const notFound = (body: string): PusherHttpError => ({ status: 404, body });
export const tooLarge = (body: string): PusherHttpError => ({ status: 413, body });

export function isPusherHttpError(value: unknown): value is PusherHttpError {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PusherHttpError).status === 'number' &&
    typeof (value as PusherHttpError).body === 'string'
  );
}
