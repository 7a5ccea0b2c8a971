import type { Broker, Publication } from './broker/broker';
import { MemoryBroker, MemoryBus } from './broker/broker-memory';
import type { History, HistoryRetention, StreamPosition } from './history/history';
import { MemoryHistory } from './history/history-memory';
import type { PresenceStore } from './presence/presence-store';
import { MemoryPresenceStore } from './presence/presence-memory';
import type { ConnectionCounts } from './counts/connection-counts';
import { MemoryConnectionCounts } from './counts/counts-memory';
import type { LogRecord, MessageLog } from './logs/message-log';
import { MemoryMessageLog } from './logs/message-log-memory';
import type { KeyStore } from './keys/key-store';
import { MemoryKeyStore } from './keys/key-store-memory';
import type { NodeRegistry } from './nodes/node-registry';
import { MemoryNodeRegistry } from './nodes/node-registry-memory';
import type { WebhookQueue, WebhookQueueLimits } from './webhooks/webhooks';
import { MemoryWebhookQueue } from './webhooks/webhooks-memory';
import type { Quotas } from './quotas/quotas';
import type { ApiKey } from './types';
import { createMemoryQuotas } from './quotas/quotas-memory';

/** Every port a service needs, from one backend. */
export interface Engine {
  readonly kind: 'memory' | 'redis';
  readonly broker: Broker;
  /** Topic streams, read side; `broker.publish(publication, retention)` appends to them. */
  readonly history: History;
  readonly presence: PresenceStore;
  readonly counts: ConnectionCounts;
  readonly logs: MessageLog;
  readonly keys: KeyStore;
  readonly nodes: NodeRegistry;
  /** Webhook events, produced by `counts` and `presence` (and `append`), read by the dispatcher. */
  readonly webhooks: WebhookQueue;
  /** Per-key quotas counted across the cluster (docs/security.md, "Limits"). */
  readonly quotas: Quotas;
  /**
   * `broker.publish(publication, retention)` that also appends `record` to `key`'s message log,
   * in the same backend call: the record is logged if and only if the publication was accepted,
   * before this resolves, at no command of its own. Only where the backend can (a standalone
   * Redis: the publish script); elsewhere callers publish, then `logs.append`.
   */
  publishLogged?(
    publication: Publication,
    retention: HistoryRetention,
    key: ApiKey,
    record: LogRecord,
  ): Promise<StreamPosition>;
  /** Whether the backend is reachable now (always true in memory). */
  isAvailable(): boolean;
  /** Called on every change of availability (Redis lost, Redis back). */
  onAvailability(listener: (available: boolean) => void): void;
  /** Called for every backend call that failed (Redis only), for metrics. */
  onCommandError?(listener: () => void): void;
  /**
   * Called with the bytes of stored publications dropped because a topic's stream passed its
   * byte cap (`HISTORY_MAX_BYTES_PER_CHANNEL`), for metrics.
   */
  onHistoryTrimmed?(listener: (bytes: number) => void): void;
  close(): Promise<void>;
}

/** The memory engine's shared state, so several services in one process see the same data. */
export interface MemoryState {
  bus: MemoryBus;
  /** The bus's streams (`bus.history`). */
  history: MemoryHistory;
  presence: MemoryPresenceStore;
  counts: MemoryConnectionCounts;
  logs: MemoryMessageLog;
  keys: MemoryKeyStore;
  nodes: MemoryNodeRegistry;
  webhooks: MemoryWebhookQueue;
  quotas: Quotas;
}

export interface MemoryStateOptions {
  logSize?: number;
  keysFile?: string;
  /** The TTL empty epochs are judged by when a read names none (`HISTORY_TTL_SECONDS`). */
  historyTtlSeconds?: number;
  /** Clock of the streams' expiry and of the daily quota's day, in ms (tests inject one). */
  now?: () => number;
  /** Per-key webhook queue limits (`WEBHOOK_QUEUE_MAX_EVENTS`, `WEBHOOK_QUEUE_MAX_BYTES`). */
  webhookQueue?: WebhookQueueLimits;
}

export function createMemoryState(options: MemoryStateOptions = {}): MemoryState {
  const history = new MemoryHistory({
    ...(options.now ? { now: options.now } : {}),
    ...(options.historyTtlSeconds !== undefined ? { defaultTtlSeconds: options.historyTtlSeconds } : {}),
  });
  const keys = new MemoryKeyStore(options.keysFile);
  const webhooks = new MemoryWebhookQueue(
    (key) => keys.webhookEventsOf(key),
    Date.now, // the dispatcher's retry window is on the wall clock
    (key) => keys.has(key),
    options.webhookQueue,
  );
  return {
    bus: new MemoryBus(history),
    history,
    presence: new MemoryPresenceStore(webhooks),
    counts: new MemoryConnectionCounts(webhooks),
    logs: new MemoryMessageLog(options.logSize),
    keys,
    nodes: new MemoryNodeRegistry(),
    webhooks,
    quotas: createMemoryQuotas(options.now),
  };
}

/** An engine over memory state; each call is one node (its own broker on the shared bus). */
export function createMemoryEngine(state: MemoryState): Engine {
  const broker = new MemoryBroker(state.bus);
  return {
    kind: 'memory',
    broker,
    history: state.history,
    presence: state.presence,
    counts: state.counts,
    logs: state.logs,
    keys: state.keys,
    nodes: state.nodes,
    webhooks: state.webhooks,
    quotas: state.quotas,
    isAvailable: () => true,
    onAvailability: () => undefined,
    // The streams are the process's, shared by its nodes: each node's listener hears every trim.
    onHistoryTrimmed: (listener) => state.history.trimListeners.push(listener),
    close: () => broker.close(),
  };
}
