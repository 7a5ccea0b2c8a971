import type { HttpReply } from '../transport/types';
import type { Engine, NodeId } from '@switchboard/core';
import type { NodeStatus } from '../deps';

/** What the health check reads. */
export interface HealthDeps {
  readonly engine: Engine;
  readonly nodeId: NodeId;
  readonly status: NodeStatus;
}

/**
 * `GET /api/health` (readiness): 200 `ok` while serving and reaching the engine; 503 with a
 * reason otherwise. `GET /api/live` (liveness) answers 200 whenever the process serves HTTP,
 * whatever Redis or a drain is doing, so an orchestrator never restarts a node for a Redis outage.
 */
export function health(ctx: HealthDeps): HttpReply {
  if (ctx.status.draining) {
    return { status: 503, body: JSON.stringify({ status: 'draining', reason: 'The node is shutting down' }) };
  }
  if (!ctx.engine.isAvailable()) {
    return {
      status: 503,
      body: JSON.stringify({ status: 'unavailable', reason: 'The engine (Redis) is unreachable' }),
    };
  }
  return { status: 200, body: JSON.stringify({ status: 'ok', nodeId: ctx.nodeId }) };
}
