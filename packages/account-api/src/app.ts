import express from 'express';
import type { Express, RequestHandler, Router } from 'express';
import type { z } from 'zod';
import { AuthFailureLimiter, EngineUnavailableError } from '@switchboard/core';
import type { Config, Engine, Logger, Metrics } from '@switchboard/core';
import { authenticate, authenticatedKey } from './http/authenticate';
import { errorHandler, methodNotAllowed, notFound } from './http/error-handler';
import { parseBody, parseQuery } from './http/query';
import { serveConsole } from './console';
import { historyEndpoint, kickEndpoint, publishEndpoint } from './routes/channel-actions';
import { connectionsEndpoint, connectionsSumEndpoint } from './routes/connections';
import { domainsEndpoint, settingsEndpoint } from './routes/domains';
import type { Endpoint, EndpointContext, PostEndpoint } from './routes/endpoint';
import { health, live } from './routes/health';
import { logsEndpoint } from './routes/logs';
import { channelMembersEndpoint, membersEndpoint } from './routes/members';

export interface AccountApiDeps {
  readonly engine: Engine;
  readonly logger: Logger;
  readonly config: Config;
  /** Prometheus instruments; HTTP requests are counted by route and status when given. */
  readonly metrics?: Metrics;
}

const ENDPOINTS: ReadonlyArray<Endpoint<z.ZodTypeAny>> = [
  domainsEndpoint,
  connectionsEndpoint,
  connectionsSumEndpoint,
  logsEndpoint,
  membersEndpoint,
  historyEndpoint,
  settingsEndpoint,
  channelMembersEndpoint,
];

const POST_ENDPOINTS: ReadonlyArray<PostEndpoint<z.ZodTypeAny>> = [publishEndpoint, kickEndpoint];

/** Every GET path of the JSON API, for documentation checks. */
export const ACCOUNT_API_PATHS: readonly string[] = [
  '/api/health',
  '/api/live',
  ...ENDPOINTS.map((e) => `/api${e.path}`),
];

/** Every POST path of the JSON API (the console's actions), for documentation checks. */
export const ACCOUNT_API_POST_PATHS: readonly string[] = POST_ENDPOINTS.map((e) => `/api${e.path}`);

/** Express answers HEAD for every GET route. */
const ALLOW = ['GET', 'HEAD'] as const;
const ALLOW_POST = ['POST'] as const;

/** Fails fast while the engine is known to be down, instead of waiting on a store call. */
const requireEngine =
  (engine: Engine): RequestHandler =>
  (_req, _res, next) => {
    if (!engine.isAvailable()) throw new EngineUnavailableError();
    next();
  };

/** Records the route pattern for metrics (errors leave Express's `req.route` unset). */
const named =
  (route: string): RequestHandler =>
  (_req, res, next) => {
    res.locals['route'] = route;
    next();
  };

function mount<S extends z.ZodTypeAny>(
  router: Router,
  endpoint: Endpoint<S>,
  guards: RequestHandler[],
  context: EndpointContext,
): void {
  router
    .route(endpoint.path)
    .all(named(`/api${endpoint.path}`))
    .get(...guards, async (req, res) => {
      const query = parseQuery(endpoint.query, req.query);
      res.json(await endpoint.handle(authenticatedKey(res), query, context));
    })
    .all(methodNotAllowed(ALLOW));
}

function mountPost<B extends z.ZodTypeAny>(
  router: Router,
  endpoint: PostEndpoint<B>,
  guards: RequestHandler[],
  context: EndpointContext,
): void {
  // Read after authentication, so an unauthenticated request gets its 401 whatever its body.
  // The limit leaves room for the other fields around a message of the gateways' largest frame.
  const json = express.json({ limit: context.config.limits.maxMessageBytes + 4096, strict: true });
  router
    .route(endpoint.path)
    .all(named(`/api${endpoint.path}`))
    .post(...guards, json, async (req, res) => {
      const body = parseBody(endpoint.body, req.body);
      res.json(await endpoint.handle(authenticatedKey(res), body, context));
    })
    .all(methodNotAllowed(ALLOW_POST));
}

/**
 * The account API (docs/account-api.md): views of one API key's domains, connection counts, logs,
 * members and history, served from the engine's shared stores without asking any gateway, and
 * the console's actions (publish, kick) through the engine. Every JSON route is under `/api`;
 * every response there, errors included, is JSON. The web console (docs/console.md) is served
 * at `/` and `/console/…`.
 */
export function createAccountApi(deps: AccountApiDeps): Express {
  const { engine, config } = deps;
  const logger = deps.logger.child({ component: 'account-api' });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('case sensitive routing', true);
  // `req.ip`: behind a peer in TRUSTED_PROXIES, the rightmost X-Forwarded-For entry that is not
  // itself a trusted proxy (the gateway's rule, docs/security.md); else the peer.
  app.set('trust proxy', config.trustedProxies.length > 0 ? [...config.trustedProxies] : false);

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    res.set('Cache-Control', 'no-store');
    // Browsers must not read an answer as another type than it says (docs/security.md).
    res.set('X-Content-Type-Options', 'nosniff');
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.debug({ method: req.method, path: req.path, status: res.statusCode, ms }, 'request');
      // The matched route pattern, never the raw URL (label values must stay bounded).
      const route: unknown = res.locals['route'];
      deps.metrics?.httpRequests.inc({
        route: typeof route === 'string' ? route : 'other',
        status: String(res.statusCode),
      });
    });
    next();
  });

  const api = express.Router({ caseSensitive: true });
  api.route('/health').all(named('/api/health')).get(health(engine)).all(methodNotAllowed(ALLOW));
  api.route('/live').all(named('/api/live')).get(live).all(methodNotAllowed(ALLOW));
  const failures = new AuthFailureLimiter(config.limits.authFailures);
  const authFailed = (): void => deps.metrics?.authFailures.inc({ api: 'account' });
  const guards = [requireEngine(engine), authenticate(engine.keys, failures, authFailed)];
  const context: EndpointContext = { engine, config, logger, origin: `account-api:${config.nodeId}` };
  for (const endpoint of ENDPOINTS) mount(api, endpoint, guards, context);
  for (const endpoint of POST_ENDPOINTS) mountPost(api, endpoint, guards, context);

  app.use('/api', api);
  serveConsole(app, named);
  app.use(notFound);
  app.use(errorHandler(logger));
  return app;
}
