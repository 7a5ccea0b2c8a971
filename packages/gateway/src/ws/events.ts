import type { Topic } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { ConnectionState, Subscription } from './connection';
import { deliverLocal } from './delivery';
import { stampChannel } from './frames';
import { sendTo } from './send';

/**
 * Publishes a frame to a channel on every node: this node's connections at once, the others
 * through the broker. `sender` (local) is excluded unless its `notify_self` is on. A broker
 * failure loses only the remote part; it is logged, never thrown. Resolves once the broker took
 * it (or failed), for callers that must not close the engine before.
 */
export function publishToChannel(
  ctx: GatewayContext,
  topic: Topic,
  body: string,
  options: {
    stampable: boolean;
    sender?: ConnectionState;
    to?: string;
    binary?: boolean;
    source?: 'api' | 'client';
  },
): Promise<void> {
  const publication = {
    topic,
    body,
    origin: ctx.nodeId,
    acceptedAt: Date.now(),
    ...(options.source ? { source: options.source } : {}),
    ...(options.stampable ? { stampable: true } : {}),
    ...(options.to !== undefined ? { to: options.to } : {}),
    ...(options.binary ? { binary: true } : {}),
  };
  deliverLocal(ctx, publication, options.sender);
  return ctx.engine.broker
    .publish(publication)
    .then(() => undefined)
    .catch((error: unknown) => {
      ctx.logger.warn(
        { err: error, channel: topic.channel },
        'cross-node fan-out failed; delivered on this node only',
      );
    });
}

/** Sends a V4 frame of `sub`'s channel to one connection: stamped unless it is the primary. */
export function sendChannelFrame(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  body: string,
): void {
  sendTo(ctx, state, sub.primary ? body : stampChannel(body, sub.channel));
}
