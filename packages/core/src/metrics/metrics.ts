import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DroppedKind } from '../broker/broker';
import { TOPIC_FAMILIES } from '../config/families';
import { heapUsedAfterGc, watchHeapAfterGc } from './heap-after-gc';

/** Where a message entered the system: the REST publish endpoint or a client's WebSocket frame. */
export type MessageSource = 'api' | 'client';

/** Bucket bounds (seconds) of the publish-to-delivery histogram: 0.1 ms to 1 s. */
export const DELIVERY_LATENCY_BUCKETS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

export interface MetricsOptions {
  /** Which service this process runs, exported as the `service` label (`gateway`, `account-api`, `all-in-one`). */
  service: string;
  /** The node's `NODE_ID`, exported as the `node_id` label so series match log lines. */
  nodeId?: string;
  /** Process and Node.js metrics (CPU, memory, GC, event-loop lag). Default true; tests may turn them off. */
  defaultMetrics?: boolean;
}

/**
 * The process's metrics: one registry, the Node.js default metrics, and the `switchboard_*`
 * instruments. Create it once per process (the all-in-one `start` shares it between the gateway and
 * the account API) and pass it down. Names, labels and meanings are documented in docs/operations.md.
 */
export interface Metrics {
  readonly registry: Registry;
  /** Open WebSocket connections on this node. */
  readonly connections: Gauge<'protocol'>;
  /** Channel subscriptions on this node (a V3 socket has one, a V4 socket one per channel). */
  readonly subscriptions: Gauge<'protocol'>;
  /** Messages accepted for fan-out on this node: REST publishes and relayed client frames. */
  readonly messagesIn: Counter<'protocol' | 'source'>;
  /** Messages delivered to local sockets, one per recipient socket. */
  readonly messagesOut: Counter<'protocol' | 'source'>;
  /** Seconds from a message being accepted (on any node) to its delivery to local sockets. */
  readonly deliveryLatency: Histogram<'protocol'>;
  /** 1 while this process's Redis connection is up, 0 while it is lost or before it is set (always 0 on the memory engine). */
  readonly redisConnected: Gauge;
  /** Redis commands that failed (timeouts, connection errors, script errors). */
  readonly redisCommandErrors: Counter;
  /** Times a Redis connection was re-established after being lost. */
  readonly redisReconnects: Counter;
  /** Connections closed or unsubscribed by a kick. */
  readonly kicks: Counter<'protocol'>;
  /** WebSocket closes, by close code (1000, 1001, 1006, 4000, 4501, …). */
  readonly closes: Counter<'code'>;
  /** Messages from other nodes dropped because they did not parse (control commands, publications). */
  readonly droppedMessages: Counter<'kind'>;
  /** HTTP requests answered, by route pattern (never the raw URL) and status. */
  readonly httpRequests: Counter<'route' | 'status'>;
  /** Failed authentications (unknown key or wrong secret), by API: `cluster` (gateway) or `account`. */
  readonly authFailures: Counter<'api'>;
  /** Webhook requests, by result: `delivered` (2xx), `failed` (retried later), `dropped` (gave up). */
  readonly webhookDeliveries: Counter<'result'>;
  /** Webhook events stored and not yet delivered, for the keys this node dispatches. */
  readonly webhookQueueDepth: Gauge;
  /** Seconds from an event being stored to its batch's 2xx answer. */
  readonly webhookLatency: Histogram;
  /** Webhook batches dropped after the retry window (`WEBHOOK_RETRY_SECONDS`). */
  readonly webhookDroppedBatches: Counter;
  /** Webhook events dropped, oldest first, from a key's full queue (`WEBHOOK_QUEUE_MAX_*`). */
  readonly webhookDroppedEvents: Counter;
  /** Bytes of stored publications dropped because a channel's history passed `HISTORY_MAX_BYTES_PER_CHANNEL`. */
  readonly historyTrimmedBytes: Counter;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  /** The `Content-Type` of `render()`'s output. */
  readonly contentType: string;
}

const SOURCE_VALUES: readonly MessageSource[] = ['api', 'client'];
const DROPPED_KINDS: readonly DroppedKind[] = ['control', 'publication'];

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  const defaultLabels: Record<string, string> = { service: options.service };
  if (options.nodeId !== undefined) defaultLabels.node_id = options.nodeId;
  registry.setDefaultLabels(defaultLabels);
  const registers = [registry];
  if (options.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
    // Alongside the defaults: a leak shows in this one as a climb, without the sawtooth of used heap.
    watchHeapAfterGc();
    new Gauge({
      name: 'switchboard_heap_used_after_gc_bytes',
      help: 'V8 heap used right after the latest full (mark-compact) collection; 0 before the first',
      registers,
      collect() {
        this.set(heapUsedAfterGc());
      },
    });
  }

  const metrics: Metrics = {
    registry,
    connections: new Gauge({
      name: 'switchboard_connections',
      help: 'Open WebSocket connections on this node',
      labelNames: ['protocol'] as const,
      registers,
    }),
    subscriptions: new Gauge({
      name: 'switchboard_subscriptions',
      help: 'Channel subscriptions on this node (V3: one per socket; V4: one per subscribed channel)',
      labelNames: ['protocol'] as const,
      registers,
    }),
    messagesIn: new Counter({
      name: 'switchboard_messages_in_total',
      help: 'Messages accepted for fan-out on this node (REST publishes and relayed client frames)',
      labelNames: ['protocol', 'source'] as const,
      registers,
    }),
    messagesOut: new Counter({
      name: 'switchboard_messages_out_total',
      help: 'Messages delivered to local sockets, one per recipient',
      labelNames: ['protocol', 'source'] as const,
      registers,
    }),
    deliveryLatency: new Histogram({
      name: 'switchboard_delivery_latency_seconds',
      help: 'Seconds from a message being accepted (on any node) to its delivery to sockets on this node',
      labelNames: ['protocol'] as const,
      buckets: [...DELIVERY_LATENCY_BUCKETS],
      registers,
    }),
    redisConnected: new Gauge({
      name: 'switchboard_redis_connected',
      help: '1 while the Redis connection is up, 0 while it is lost',
      registers,
    }),
    redisCommandErrors: new Counter({
      name: 'switchboard_redis_command_errors_total',
      help: 'Redis commands that failed',
      registers,
    }),
    redisReconnects: new Counter({
      name: 'switchboard_redis_reconnects_total',
      help: 'Redis connections re-established after a loss',
      registers,
    }),
    kicks: new Counter({
      name: 'switchboard_kicks_total',
      help: 'Connections closed or unsubscribed by a kick',
      labelNames: ['protocol'] as const,
      registers,
    }),
    closes: new Counter({
      name: 'switchboard_closes_total',
      help: 'WebSocket connections closed, by close code',
      labelNames: ['code'] as const,
      registers,
    }),
    droppedMessages: new Counter({
      name: 'switchboard_dropped_messages_total',
      help: 'Messages from the engine dropped because they did not parse, by kind (control, publication)',
      labelNames: ['kind'] as const,
      registers,
    }),
    httpRequests: new Counter({
      name: 'switchboard_http_requests_total',
      help: 'HTTP requests answered, by route pattern and status',
      labelNames: ['route', 'status'] as const,
      registers,
    }),
    authFailures: new Counter({
      name: 'switchboard_auth_failures_total',
      help: 'Failed authentications (unknown API key or wrong secret), by API (cluster, account)',
      labelNames: ['api'] as const,
      registers,
    }),
    webhookDeliveries: new Counter({
      name: 'switchboard_webhook_deliveries_total',
      help: 'Webhook requests by result (delivered, failed, dropped)',
      labelNames: ['result'] as const,
      registers,
    }),
    webhookQueueDepth: new Gauge({
      name: 'switchboard_webhook_queue_depth',
      help: 'Webhook events stored and not yet delivered, for the keys this node dispatches',
      registers,
    }),
    webhookLatency: new Histogram({
      name: 'switchboard_webhook_latency_seconds',
      help: 'Seconds from a webhook event being stored to its delivery (2xx)',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    webhookDroppedBatches: new Counter({
      name: 'switchboard_webhook_dropped_batches_total',
      help: 'Webhook batches dropped after the retry window',
      registers,
    }),
    webhookDroppedEvents: new Counter({
      name: 'switchboard_webhook_queue_dropped_events_total',
      help: 'Webhook events dropped, oldest first, from a full queue (WEBHOOK_QUEUE_MAX_EVENTS, WEBHOOK_QUEUE_MAX_BYTES)',
      registers,
    }),
    historyTrimmedBytes: new Counter({
      name: 'switchboard_history_trimmed_bytes_total',
      help: "Bytes of stored publications dropped because a channel's history passed its byte cap",
      registers,
    }),
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };

  // Export every series with a fixed label set from the start, so rate() and absent() behave before traffic.
  for (const kind of DROPPED_KINDS) metrics.droppedMessages.inc({ kind }, 0);
  metrics.authFailures.inc({ api: 'cluster' }, 0);
  metrics.authFailures.inc({ api: 'account' }, 0);
  for (const result of ['delivered', 'failed', 'dropped']) metrics.webhookDeliveries.inc({ result }, 0);
  for (const protocol of TOPIC_FAMILIES) {
    metrics.connections.set({ protocol }, 0);
    metrics.subscriptions.set({ protocol }, 0);
    metrics.kicks.inc({ protocol }, 0);
    for (const source of SOURCE_VALUES) {
      metrics.messagesIn.inc({ protocol, source }, 0);
      metrics.messagesOut.inc({ protocol, source }, 0);
    }
  }
  return metrics;
}
