import type { Config, ControlCommand, Engine, Logger } from '@switchboard/core';
import { bodyTooLarge, createApiHandler } from './api/router';
import type { GatewayContext } from './context';
import { KeyCache } from './key-cache';
import { createUwsTransport } from './transport/uws';
import { BrokerSubscriptions } from './ws/broker-subscriptions';
import type { SocketData } from './ws/connection';
import { deliverLocal } from './ws/delivery';
import { executeKick } from './ws/kick';
import { Registry } from './ws/registry';
import { closeConnection } from './ws/send';
import { createSocketHandlers } from './ws/socket-handlers';

export interface GatewayDeps {
  readonly config: Config;
  readonly engine: Engine;
  readonly logger: Logger;
}

export interface Gateway {
  /** Binds `config.host:config.port` (0 picks a free port) and resolves the port. */
  listen(): Promise<number>;
  /**
   * Graceful drain (SPEC §8): health reports `draining`, the listen socket closes, sockets are
   * closed in batches with 4000 so clients reconnect elsewhere, and this node's presence is
   * removed. Resolves when every socket is closed or the grace period is over.
   */
  drain(): Promise<void>;
  /** Closes everything at once (after `drain`, or in tests). */
  close(): Promise<void>;
  readonly context: GatewayContext;
}

const SLOW_CONSUMER_SWEEP_MS = 250;

export function createGateway(deps: GatewayDeps): Gateway {
  const { config, engine } = deps;
  const logger = deps.logger.child({ component: 'gateway' });
  let sequence = 0;
  const status = { draining: false, admitting: 0 };
  const registry = new Registry();

  const ctx: GatewayContext = {
    config,
    engine,
    logger,
    nodeId: config.nodeId,
    transport: undefined as unknown as GatewayContext['transport'],
    registry,
    subscriptions: new BrokerSubscriptions(engine.broker, logger),
    keys: new KeyCache(engine.keys, config.cluster.keyCacheMs),
    status,
    nextConnId: () => `${config.nodeId}/${(++sequence).toString(36)}`,
  };
  const transport = createUwsTransport<SocketData>(
    {
      ...createSocketHandlers(ctx),
      http: createApiHandler(ctx),
      bodyTooLarge: () => bodyTooLarge(config.limits.maxMessageBytes),
    },
    {
      // Frames up to 16× the message limit reach the gateway, which answers them with 4513 and an
      // error frame; beyond that uWS drops the connection itself (1009) without reading more.
      maxFrameBytes: config.limits.maxMessageBytes * 16,
      maxBodyBytes: config.limits.maxMessageBytes,
      idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
      // uWS silently skips a socket over this; the sweep below closes slow consumers (4008) long
      // before, while their close frame still fits, so no one loses messages without a close.
      maxBackpressureBytes: config.limits.slowConsumerBytes * 8,
    },
  );
  (ctx as { transport: GatewayContext['transport'] }).transport = transport;

  engine.broker.setHandlers({
    message(publication) {
      // This node delivered its own publications when they entered.
      if (publication.origin !== config.nodeId) deliverLocal(ctx, publication);
    },
    control(command: ControlCommand) {
      if (command.type === 'kick') executeKick(ctx, command.selector);
      else if (command.type === 'key-changed') ctx.keys.invalidate(command.key);
    },
  });

  const sweep = setInterval(() => {
    const limit = config.limits.slowConsumerBytes;
    for (const state of registry.all()) {
      if (state.conn && state.conn.getBufferedAmount() >= limit) closeConnection(state, 'SLOW_CONSUMER');
    }
  }, SLOW_CONSUMER_SWEEP_MS);
  sweep.unref();

  async function drain(): Promise<void> {
    if (status.draining) return;
    status.draining = true;
    logger.info({ connections: registry.size }, 'draining');
    transport.stopListening();
    const { drainBatchSize, drainGraceMs } = config.cluster;
    const deadline = Date.now() + drainGraceMs;
    while (registry.size > 0 && Date.now() < deadline) {
      let closed = 0;
      for (const state of [...registry.all()]) {
        closeConnection(state, 'SERVER_DRAINING');
        if (++closed >= drainBatchSize) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await engine.presence.removeNode(config.nodeId).catch(() => undefined);
    await engine.counts.removeNode(config.nodeId).catch(() => undefined);
    logger.info('drained');
  }

  return {
    context: ctx,
    async listen() {
      const port = await transport.listen(config.host, config.port);
      logger.info({ port, host: config.host, engine: engine.kind }, 'ready');
      return port;
    },
    drain,
    async close() {
      clearInterval(sweep);
      status.draining = true;
      for (const state of [...registry.all()]) closeConnection(state, 'SERVER_DRAINING');
      transport.close();
    },
  };
}
