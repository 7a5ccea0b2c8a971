import { CLOSE_CODES } from '@switchboard/core';
import type { DroppedKind, Metrics, Protocol } from '@switchboard/core';

type Count = { inc(value?: number): void };
type Level = { inc(value?: number): void; dec(value?: number): void };

/** One meter per registered topic family (absent for any other). */
type PerFamily<T> = Readonly<Partial<Record<Protocol, T>>>;

/**
 * The gateway's instruments, bound to their label values once, so a hot path pays one property
 * access and an addition, never a label lookup. Without a metrics registry every meter is a no-op.
 */
export interface Meters {
  readonly connections: PerFamily<Level>;
  readonly subscriptions: PerFamily<Level>;
  readonly messagesIn: PerFamily<{ api: Count; client: Count }>;
  readonly messagesOut: PerFamily<{ api: Count; client: Count }>;
  readonly kicks: PerFamily<Count>;
  deliveryLatency(protocol: Protocol, seconds: number): void;
  /** Counts a WebSocket close; codes outside `CLOSE_LABELS` count as `other`. */
  closed(code: number): void;
  /** Counts a message from the engine that did not parse. */
  dropped(kind: DroppedKind): void;
  http(route: string, status: number): void;
  authFailure(): void;
  redisConnected(up: boolean): void;
  redisCommandError(): void;
  redisReconnected(): void;
  /** Bytes a channel's history dropped for its byte cap (`HISTORY_MAX_BYTES_PER_CHANNEL`). */
  historyTrimmed(bytes: number): void;
}

/**
 * The close codes the `closes` metric names: the error catalog's and the standard ones a client or
 * the network produces (1000 normal, 1001 going away, 1005 no code, 1006 abnormal). Any other code
 * is the client's own choice and counts as `other`, so a client cannot mint label values.
 */
export const CLOSE_LABELS: ReadonlySet<number> = new Set([
  1000,
  1001,
  1005,
  1006,
  ...Object.values(CLOSE_CODES).map((close) => close.code),
]);

const NOOP: Level = { inc: () => undefined, dec: () => undefined };

/** The meters of the topic families in `families` (the registered dialects'). */
export function createMeters(metrics: Metrics | undefined, families: readonly Protocol[]): Meters {
  const per = <T>(make: (protocol: Protocol) => T): Record<Protocol, T> =>
    Object.fromEntries(families.map((family) => [family, make(family)])) as Record<Protocol, T>;
  if (!metrics) {
    const both = <T>(value: T): Record<Protocol, T> => per(() => value);
    return {
      connections: both(NOOP),
      subscriptions: both(NOOP),
      messagesIn: both({ api: NOOP, client: NOOP }),
      messagesOut: both({ api: NOOP, client: NOOP }),
      kicks: both(NOOP),
      deliveryLatency: () => undefined,
      closed: () => undefined,
      dropped: () => undefined,
      http: () => undefined,
      authFailure: () => undefined,
      redisConnected: () => undefined,
      redisCommandError: () => undefined,
      redisReconnected: () => undefined,
      historyTrimmed: () => undefined,
    };
  }
  const latency = per((protocol) => metrics.deliveryLatency.labels(protocol));
  // One labelled child per route and status (both bounded sets), found without hashing labels.
  const httpChildren = new Map<string, { inc(): void }>();
  const http = (route: string, status: number): void => {
    const id = `${status} ${route}`;
    let child = httpChildren.get(id);
    if (!child) {
      child = metrics.httpRequests.labels(route, String(status));
      httpChildren.set(id, child);
    }
    child.inc();
  };
  return {
    connections: per((protocol) => metrics.connections.labels(protocol)),
    subscriptions: per((protocol) => metrics.subscriptions.labels(protocol)),
    messagesIn: per((protocol) => ({
      api: metrics.messagesIn.labels(protocol, 'api'),
      client: metrics.messagesIn.labels(protocol, 'client'),
    })),
    messagesOut: per((protocol) => ({
      api: metrics.messagesOut.labels(protocol, 'api'),
      client: metrics.messagesOut.labels(protocol, 'client'),
    })),
    kicks: per((protocol) => metrics.kicks.labels(protocol)),
    deliveryLatency: (protocol, seconds) => latency[protocol]?.observe(seconds),
    closed: (code) => metrics.closes.inc({ code: CLOSE_LABELS.has(code) ? String(code) : 'other' }),
    dropped: (kind) => metrics.droppedMessages.inc({ kind }),
    http,
    authFailure: () => metrics.authFailures.inc({ api: 'cluster' }),
    redisConnected: (up) => metrics.redisConnected.set(up ? 1 : 0),
    redisCommandError: () => metrics.redisCommandErrors.inc(),
    redisReconnected: () => metrics.redisReconnects.inc(),
    historyTrimmed: (bytes) => metrics.historyTrimmedBytes.inc(bytes),
  };
}
