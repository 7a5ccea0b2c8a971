import type { RequestHandler } from 'express';
import type { Engine } from '@switchboard/core';

export type HealthBody = { status: 'ok' } | { status: 'unavailable'; reason: string };

/**
 * `GET /api/health`, no authentication: 200 `{"status":"ok"}` while the engine is reachable,
 * otherwise 503 `{"status":"unavailable","reason":…}`, for load balancers and Kubernetes probes.
 * Query parameters are ignored (probes and cache busters add them).
 */
export const health =
  (engine: Engine): RequestHandler =>
  (_req, res) => {
    const body: HealthBody = engine.isAvailable()
      ? { status: 'ok' }
      : { status: 'unavailable', reason: `the ${engine.kind} engine is unreachable` };
    res.status(body.status === 'ok' ? 200 : 503).json(body);
  };

/**
 * `GET /api/live`, no authentication: 200 `{"status":"alive"}` whenever the process serves HTTP,
 * whatever the engine does, for liveness probes (a Redis outage must not restart the service).
 */
export const live: RequestHandler = (_req, res) => {
  res.json({ status: 'alive' });
};
