import { AppError } from '@switchboard/core';
import type { HttpReply, HttpRequest } from '../transport/types';
import { health } from './health';
import { parseBody } from './request';
import type { RouteHandler } from '../protocols/dialect';
import type { AuthFailureLimiter } from '@switchboard/core';
import type { ClientAddresses } from '../limits/rate-limit';
import type { Dialects } from '../protocols/registry';
import type { HealthDeps } from './health';
import type { ApiDeps } from './deps';

/** What the cluster API takes: its handlers' dependencies, the dialects' routes and the failed-authentication limits. */
export interface RouterDeps extends ApiDeps, HealthDeps {
  readonly dialects: Dialects;
  readonly addresses: ClientAddresses;
  readonly authFailures: AuthFailureLimiter;
}

type Answer = HttpReply | Promise<HttpReply>;

const json = (status: number, value: object, headers?: Record<string, string>): HttpReply =>
  headers ? { status, headers, body: JSON.stringify(value) } : { status, body: JSON.stringify(value) };

/**
 * 429 replies by text and `Retry-After`, serialized once: a flooding tenant gets the same few
 * answers thousands of times a second. Bounded (the texts name a limit value, not client input).
 */
const refusals = new Map<string, HttpReply>();

function refusalReply(error: AppError): HttpReply {
  const id = `${error.code}|${error.retryAfterSeconds}|${error.message}`;
  let reply = refusals.get(id);
  if (!reply) {
    if (refusals.size >= 1000) refusals.clear();
    const body = { success: false, error: error.message, code: error.code };
    const headers =
      error.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(error.retryAfterSeconds) };
    reply = Object.freeze(json(error.status, body, headers));
    refusals.set(id, reply);
  }
  return reply;
}

/** The one mapping from errors to responses: `{"success":false,"error":text,"code":CODE}`. */
export function errorReply(error: unknown, ctx: RouterDeps): HttpReply {
  if (error instanceof AppError) {
    if (error.status === 429) return refusalReply(error);
    const headers =
      error.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(error.retryAfterSeconds) };
    return json(error.status, { success: false, error: error.message, code: error.code }, headers);
  }
  ctx.logger.error({ err: error }, 'cluster API request failed');
  return json(500, { success: false, error: 'Internal error', code: 'SB_INTERNAL' });
}

export const bodyTooLarge = (limit: number): HttpReply =>
  json(413, {
    success: false,
    error: `Payload too large: the limit is ${limit} bytes`,
    code: 'SB_PAYLOAD_TOO_LARGE',
  });

/**
 * The cluster API (docs/openapi.yaml) on the gateway port: every dialect's POST routes, health
 * and liveness. Written without `async`: a refusal is answered in the request's own turn, and a
 * handler's answer is one promise step away.
 */
export function createApiHandler(ctx: RouterDeps): (request: HttpRequest) => Answer {
  const postRoutes: Record<string, RouteHandler> = Object.assign(
    {},
    ...ctx.dialects.all.map((dialect) => dialect.routes),
  ) as Record<string, RouteHandler>;
  /** Route labels for metrics: known paths only, never a raw URL (unbounded label values). */
  const routeNames = new Set([...Object.keys(postRoutes), '/api/health', '/api/live']);
  return (request) => {
    const path =
      request.path.length > 1 && request.path.endsWith('/') ? request.path.slice(0, -1) : request.path;
    const counted = (reply: HttpReply): HttpReply => {
      ctx.meters.http(routeNames.has(request.path) ? request.path : 'other', reply.status);
      return reply;
    };
    const handler = postRoutes[path];
    if (handler && request.method === 'POST') return authenticated(request, handler, counted);
    if (path === '/api/live' && (request.method === 'GET' || request.method === 'HEAD'))
      return counted(json(200, { status: 'alive' }));
    if (path === '/api/health' && (request.method === 'GET' || request.method === 'HEAD'))
      return counted(health(ctx));
    return counted(refused(request, path, !!handler));
  };

  /** Not found, or a method the path does not allow. */
  function refused(request: HttpRequest, path: string, isPost: boolean): HttpReply {
    const isHealth = path === '/api/health' || path === '/api/live';
    if (!isPost && !isHealth) {
      return errorReply(new AppError('SB_NOT_FOUND', `No such endpoint: ${request.method} ${path}`), ctx);
    }
    const allow = isHealth ? 'GET, HEAD' : 'POST';
    const error = new AppError(
      'SB_METHOD_NOT_ALLOWED',
      `${request.method} is not allowed on ${path}; use ${allow}`,
    );
    return { ...errorReply(error, ctx), headers: { allow } };
  }

  /**
   * Runs a handler under the failed-authentication limit: refused (429) while the client address
   * is over it; a 401 from the handler counts against the address (never against the key, which
   * is public: docs/security.md).
   */
  function authenticated(
    request: HttpRequest,
    handler: RouteHandler,
    counted: (reply: HttpReply) => HttpReply,
  ): Answer {
    const address = (): string =>
      ctx.addresses.of(request.remoteAddress(), request.headers['x-forwarded-for']);
    const failed = (error: unknown): HttpReply => {
      if (error instanceof AppError && error.code === 'SB_UNAUTHORIZED') {
        ctx.authFailures.failed(address());
        ctx.meters.authFailure();
      }
      return counted(errorReply(error, ctx));
    };
    let answer: Promise<object>;
    try {
      const body = parseBody(request);
      if (ctx.authFailures.tracking) ctx.authFailures.check(address());
      answer = handler(ctx, body);
    } catch (error) {
      return failed(error);
    }
    return answer.then((value) => counted(json(200, value)), failed);
  }
}
