import { WebhookDispatcher } from '@switchboard/core';
import type {
  Config,
  ControlCommand,
  DispatcherTiming,
  Engine,
  Logger,
  Metrics,
  Publication,
} from '@switchboard/core';
import { bodyTooLarge, createApiHandler } from './api/router';
import { Membership } from './cluster/membership';
import { Repair } from './cluster/repair';
import { EarlyJoins } from './connections/early-joins';
import { UnconfirmedPublications } from './api/unconfirmed';
import type { GatewayContext } from './context';
import { KeyCache } from './key-cache';
import { createMeters } from './meters';
import { DIALECTS, Dialects } from './protocols';
import { ClientAddresses, ConnectionRateLimit } from './limits/rate-limit';
import { AuthFailureLimiter } from '@switchboard/core';
import type { HttpRequest, Transport } from './transport/types';
import type { DialectHttpDeps } from './protocols/dialect';
import { createUwsTransport } from './transport/uws';
import { Streams } from './streams/streams';
import { BrokerSubscriptions } from './fanout/broker-subscriptions';
import type { SocketData } from './connections/connection';
import { Delivery } from './fanout/delivery';
import { ListGate } from './fanout/list-gate';
import { CountEvents } from './fanout/count-events';
import { flatString } from './flat-string';
import { closeRevoked, executeKick } from './connections/kick';
import { Registry } from './fanout/registry';
import { closeConnection } from './fanout/send';
import { SlowConsumers } from './fanout/slow-consumers';
import { createSocketHandlers } from './connections/socket-handlers';
import { Keepalive } from './connections/keepalive';
import { createSocketIdAllocator, randomNodeNumber } from './protocols/pusher/socket-id';

export interface GatewayDeps {
  readonly config: Config;
  readonly engine: Engine;
  readonly logger: Logger;
  /** Prometheus instruments (`createMetrics`); none when metrics are off. */
  readonly metrics?: Metrics;
  /** Webhook dispatch timings other than the documented defaults (tests). */
  readonly webhookTiming?: Partial<DispatcherTiming>;
}

export interface Gateway {
  /** Joins the cluster, binds `config.host:config.port` (0 picks a free port), resolves the port. */
  listen(): Promise<number>;
  /**
   * Graceful drain (docs/scaling.md): health reports `draining`, the listen socket closes, this node's
   * presence (with `member_left` events) and counts are removed at once, and sockets are closed
   * in batches with 4000 so clients reconnect elsewhere. Resolves when every socket is closed or
   * the grace period is over.
   */
  drain(): Promise<void>;
  /** Closes everything at once (after `drain`, or in tests). */
  close(): Promise<void>;
  readonly context: GatewayContext;
}

const DRAIN_BATCH_PAUSE_MS = 20;

export function createGateway(deps: GatewayDeps): Gateway {
  const { config, engine } = deps;
  const logger = deps.logger.child({ component: 'gateway' });
  const registry = new Registry();
  const dialects = new Dialects(DIALECTS);
  const meters = createMeters(deps.metrics, dialects.families);
  const slowConsumers = new SlowConsumers(() => config.limits.slowConsumerBytes);
  const listGate = new ListGate({ config });
  let sequence = 0;
  // Socket ids (`Dialect.socketIds`): this process's node number is drawn once, 48 random bits.
  const socketIds = createSocketIdAllocator(randomNodeNumber());
  // The transport is made last (its handlers need everything else): delivery reaches it late.
  const delivery = new Delivery({
    config,
    get transport(): Transport {
      return transport;
    },
    registry,
    slowConsumers,
    meters,
    listGate,
  });
  const streams = new Streams({ config, engine, logger, delivery, listGate });

  const ctx: GatewayContext = {
    config,
    engine,
    logger,
    nodeId: config.nodeId,
    dialects,
    // Getters: the transport's handlers and the repair take the context themselves, so they come
    // after it (the repair is what the presence flow reports failed writes to).
    get transport(): Transport {
      return transport;
    },
    registry,
    subscriptions: new BrokerSubscriptions(engine.broker, logger),
    delivery,
    keys: new KeyCache(
      engine.keys,
      config.cluster.keyCacheMs,
      config.seedKeys.map((seed) => seed.key),
    ),
    get repair(): Repair {
      return repair;
    },
    streams,
    listGate,
    countEvents: new CountEvents({ config, engine, logger, nodeId: config.nodeId, delivery }),
    slowConsumers,
    keepalive: new Keepalive({ config, connections: registry }),
    earlyJoins: new EarlyJoins(),
    unconfirmed: new UnconfirmedPublications(),
    status: { draining: false, admitting: 0 },
    meters,
    addresses: new ClientAddresses(config.trustedProxies),
    connectionRate: new ConnectionRateLimit(config.limits.newConnectionsPerSecondPerIp),
    authFailures: new AuthFailureLimiter(config.limits.authFailures),
    kickHere: (selector) => executeKick(ctx, selector),
    nextConnId: () => flatString(`${config.nodeId}/${(++sequence).toString(36)}`),
    nextSocketId: () => socketIds.next(),
    get dialectHttp(): DialectHttpDeps {
      return dialectHttp;
    },
  };
  const addressOf = (request: HttpRequest): string =>
    ctx.addresses.of(request.remoteAddress(), request.headers['x-forwarded-for']);
  // The context itself, plus the limiter by request and delivery with an exclusion.
  const dialectHttp: DialectHttpDeps = Object.assign(Object.create(ctx) as GatewayContext, {
    authFailures: {
      get tracking(): boolean {
        return ctx.authFailures.tracking;
      },
      check: (request: HttpRequest) => ctx.authFailures.check(addressOf(request)),
      failed: (request: HttpRequest) => {
        ctx.authFailures.failed(addressOf(request));
        ctx.meters.authFailure();
      },
    },
    deliverExcept: (publication: Publication, except: string | undefined, streamed: boolean) =>
      delivery.deliver(publication, except === undefined ? undefined : registry.byId(except), streamed),
  });
  const repair = new Repair(ctx);
  const membership = new Membership(ctx);
  // Every gateway dispatches webhooks; one at a time per key (docs/webhooks.md).
  const webhooks = new WebhookDispatcher({
    queue: engine.webhooks,
    keys: engine.keys,
    owner: config.nodeId,
    logger: deps.logger,
    retrySeconds: config.webhooks.retrySeconds,
    denyPrivate: config.webhooks.denyPrivate,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.webhookTiming ? { timing: deps.webhookTiming } : {}),
  });
  const transport = createUwsTransport<SocketData>(
    {
      ...createSocketHandlers(ctx),
      http: createApiHandler(ctx),
      bodyTooLarge: (path) => bodyTooLarge(ctx, path, config.limits.maxMessageBytes),
    },
    {
      // Frames up to 16× the message limit reach the gateway, which answers them with 4513 and an
      // error frame; beyond that uWS drops the connection itself (1006, no close
      // frame) without buffering more.
      maxFrameBytes: config.limits.maxMessageBytes * 16,
      maxBodyBytes: config.limits.maxMessageBytes,
      idleTimeoutSeconds: config.limits.idleTimeoutSeconds,
      // uWS silently skips a socket over this; `SlowConsumers` closes slow consumers (4008) long
      // before, while their close frame still fits, so no one loses messages without a close.
      maxBackpressureBytes: config.limits.slowConsumerBytes * 32,
      readForwardedFor: config.trustedProxies.length > 0,
    },
  );

  const reportedDrops = new Set<string>();
  engine.broker.setHandlers({
    message(publication) {
      // This node delivered its own publications to plain subscribers when they were accepted
      // (those it never saw accepted, it delivers now); opted-in subscribers get stream
      // publications only now, with the offset the engine assigned.
      if (publication.origin !== config.nodeId || ctx.unconfirmed.claim(publication)) {
        // A REST publication that excludes a connection (Pusher's `socket_id`) names it as its sender.
        const excluded =
          publication.sender !== undefined && publication.source === 'api'
            ? registry.byId(publication.sender)
            : undefined;
        delivery.deliver(publication, excluded);
      }
      if (publication.offset !== undefined) streams.receive(publication);
    },
    resubscribed() {
      streams.resync();
    },
    control(command: ControlCommand) {
      // A kick's count is this node's reply when the kick was requested (`kickConnections`).
      if (command.type === 'kick') return executeKick(ctx, command.selector);
      if (command.type === 'key-changed') {
        ctx.keys.invalidate(command.key);
        void closeRevoked(ctx, command.key);
      } else if (command.type === 'node-dead' && command.nodeId === config.nodeId && !ctx.status.draining) {
        logger.warn('this node was declared dead by the cluster; rewriting its presence and counts');
        void repair.restore();
      }
      return undefined;
    },
    dropped(kind, problem) {
      ctx.meters.dropped(kind);
      // Once per kind of problem: a stream of bad messages must not flood the log.
      const id = `${kind}: ${problem}`;
      if (reportedDrops.has(id)) return;
      reportedDrops.add(id);
      logger.warn(
        { kind, problem },
        'dropped a message from the engine that does not parse (a newer or broken node?); further ones like it are only counted in switchboard_dropped_messages_total',
      );
    },
    failed(kind, error) {
      logger.error({ err: error, kind }, 'handling a message from the engine failed; it was skipped');
    },
  });
  ctx.meters.redisConnected(engine.kind === 'redis' && engine.isAvailable());
  engine.onCommandError?.(() => ctx.meters.redisCommandError());
  engine.onHistoryTrimmed?.((bytes) => ctx.meters.historyTrimmed(bytes));
  // Started with the engine away (or it went away since the keys were seeded): owed until restored.
  if (!engine.isAvailable()) ctx.keys.seedsOwed();
  engine.onAvailability((available) => {
    ctx.meters.redisConnected(available);
    if (!available) {
      streams.suspend();
      // It may come back empty (restarted without persistence, or another server).
      ctx.keys.seedsOwed();
      repair.engineLost();
    }
    if (!available || ctx.status.draining) return;
    ctx.meters.redisReconnected();
    // Once subscribed again, opted-in streams compare with history: pub/sub lost what was
    // published while the connection was down.
    void repair.restore().then(() => streams.resync());
    void membership.tick();
  });

  async function drain(): Promise<void> {
    if (ctx.status.draining) return;
    ctx.status.draining = true;
    const started = Date.now();
    logger.info({ connections: registry.size }, 'draining');
    ctx.transport.stopListening();
    await membership.leave();
    await membership.cleanupNode(config.nodeId).catch((error: unknown) => {
      logger.warn(
        { err: error },
        'could not remove presence and counts while draining; the cluster removes them when this node stops heartbeating',
      );
    });
    const { drainBatchSize, drainGraceMs } = config.cluster;
    while (registry.size > 0 && Date.now() - started < drainGraceMs) {
      let closed = 0;
      for (const state of [...registry.all()]) {
        closeConnection(state, 'SERVER_DRAINING');
        if (++closed >= drainBatchSize) break;
      }
      await new Promise((resolve) => setTimeout(resolve, DRAIN_BATCH_PAUSE_MS));
    }
    logger.info({ ms: Date.now() - started, left: registry.size }, 'drained');
  }

  return {
    context: ctx,
    async listen() {
      await membership.start();
      // A node that cannot bind never served: it leaves the cluster at once instead of waiting to
      // be declared dead.
      const port = await ctx.transport.listen(config.host, config.port).catch(async (error: unknown) => {
        await membership.leave();
        throw error;
      });
      webhooks.start();
      logger.info({ port, host: config.host, engine: engine.kind }, 'ready');
      return port;
    },
    drain,
    async close() {
      ctx.slowConsumers.stop();
      ctx.keepalive.stop();
      ctx.countEvents.stop();
      membership.stop();
      for (const state of [...registry.all()]) closeConnection(state, 'SERVER_DRAINING');
      ctx.status.draining = true;
      repair.stop();
      ctx.transport.close();
      await webhooks.stop();
    },
  };
}
