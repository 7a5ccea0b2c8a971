import type { HistoryRetention } from '../history/history';
import { configSchema } from './schema';
import type { Env, SeedKey } from './schema';
import type { AuthFailureLimits } from '../auth/auth-failures';

export type RedisTarget =
  | { kind: 'standalone'; url: string }
  | { kind: 'cluster'; nodes: { host: string; port: number }[] }
  | {
      /** A master named by Sentinel, followed through failovers (docs/operations.md). */
      kind: 'sentinel';
      sentinels: { host: string; port: number }[];
      name: string;
      sentinelPassword: string | undefined;
      password: string | undefined;
      tls: boolean;
    };

/** The frozen configuration every service receives. */
export interface Config {
  readonly port: number;
  readonly accountPort: number;
  readonly metricsPort: number | undefined;
  readonly host: string;
  /** `undefined` means the in-memory engine (one node only). */
  readonly redis: RedisTarget | undefined;
  readonly redisPrefix: string;
  readonly seedKeys: readonly SeedKey[];
  readonly dataDir: string;
  readonly nodeId: string;
  readonly logLevel: Env['LOG_LEVEL'];
  /**
   * Proxies (IP addresses, CIDR blocks) whose `X-Forwarded-For` is believed: a request whose peer
   * is one of them comes from the last entry that is not (see `clientAddress`). Empty: the peer.
   */
  readonly trustedProxies: readonly string[];
  readonly limits: {
    readonly maxMessageBytes: number;
    readonly clientMessagesPerSecond: number;
    /** Per-key quota defaults across the cluster (a key's `limits` overrides them); 0 means unlimited. */
    readonly apiRequestsPerSecond: number;
    readonly publishesPerSecondPerKey: number;
    readonly messagesPerDayPerKey: number;
    /** New WebSocket connections per second from one client address, on each node; 0 means unlimited. */
    readonly newConnectionsPerSecondPerIp: number;
    /** Failed authentications per key and per client address on one process (cluster and account API). */
    readonly authFailures: AuthFailureLimits;
    readonly rosterLimit: number;
    readonly logSize: number;
    readonly maxConnectionsPerNode: number;
    readonly maxConnectionsPerKey: number;
    /** Channels one V4 socket carries, its primary included. */
    readonly maxChannelsPerSocket: number;
    readonly slowConsumerBytes: number;
    readonly idleTimeoutSeconds: number;
  };
  /** Topic streams (`HISTORY_SIZE`, `HISTORY_TTL_SECONDS`); keys may override both. */
  readonly history: HistoryRetention;
  /** How long an undelivered webhook batch is retried, from its first event's storage. */
  readonly webhooks: { readonly retrySeconds: number };
  readonly cluster: {
    readonly nodeTimeoutMs: number;
    readonly heartbeatIntervalMs: number;
    readonly keyCacheMs: number;
    readonly drainGraceMs: number;
    readonly drainBatchSize: number;
  };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.join('\n')}`);
    this.name = 'ConfigError';
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Parses the environment once; throws `ConfigError` with one line per problem. */
export function loadConfig(
  env: Record<string, string | undefined>,
  overrides: Partial<Record<string, string>> = {},
): Config {
  const source: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...env, ...overrides })) {
    if (value !== undefined && value !== '') source[name] = value;
  }
  const parsed = configSchema.safeParse(source);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || 'config'}: ${issue.message}`),
    );
  }
  const e = parsed.data;
  const redis: RedisTarget | undefined = e.REDIS_SENTINELS
    ? {
        kind: 'sentinel',
        sentinels: e.REDIS_SENTINELS,
        name: e.REDIS_SENTINEL_NAME,
        sentinelPassword: e.REDIS_SENTINEL_PASSWORD,
        password: e.REDIS_PASSWORD,
        tls: e.REDIS_SENTINEL_TLS,
      }
    : e.REDIS_CLUSTER_NODES
      ? { kind: 'cluster', nodes: e.REDIS_CLUSTER_NODES }
      : e.REDIS_URL
        ? { kind: 'standalone', url: e.REDIS_URL }
        : undefined;
  return deepFreeze({
    port: e.PORT,
    accountPort: e.ACCOUNT_PORT,
    metricsPort: e.METRICS_PORT,
    host: e.HOST,
    redis,
    redisPrefix: e.REDIS_PREFIX,
    seedKeys: e.SWITCHBOARD_KEYS ?? [],
    dataDir: e.SWITCHBOARD_DATA_DIR,
    nodeId: e.NODE_ID,
    logLevel: e.LOG_LEVEL,
    trustedProxies: e.TRUSTED_PROXIES,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      clientMessagesPerSecond: e.CLIENT_MESSAGES_PER_SECOND,
      apiRequestsPerSecond: e.API_REQUESTS_PER_SECOND,
      publishesPerSecondPerKey: e.PUBLISHES_PER_SECOND_PER_KEY,
      messagesPerDayPerKey: e.MESSAGES_PER_DAY_PER_KEY,
      newConnectionsPerSecondPerIp: e.NEW_CONNECTIONS_PER_SECOND_PER_IP,
      authFailures: {
        perKey: e.AUTH_FAILURES_PER_KEY,
        perAddress: e.AUTH_FAILURES_PER_ADDRESS,
        windowMs: e.AUTH_FAILURE_WINDOW_SECONDS * 1000,
      },
      rosterLimit: e.ROSTER_LIMIT,
      logSize: e.LOG_SIZE,
      maxConnectionsPerNode: e.MAX_CONNECTIONS_PER_NODE,
      maxConnectionsPerKey: e.MAX_CONNECTIONS_PER_KEY,
      maxChannelsPerSocket: e.MAX_CHANNELS_PER_SOCKET,
      slowConsumerBytes: e.SLOW_CONSUMER_BYTES,
      idleTimeoutSeconds: e.IDLE_TIMEOUT_SECONDS,
    },
    history: { size: e.HISTORY_SIZE, ttlSeconds: e.HISTORY_TTL_SECONDS },
    webhooks: { retrySeconds: e.WEBHOOK_RETRY_SECONDS },
    cluster: {
      nodeTimeoutMs: e.NODE_TIMEOUT_MS,
      heartbeatIntervalMs: e.HEARTBEAT_INTERVAL_MS,
      keyCacheMs: e.KEY_CACHE_MS,
      drainGraceMs: e.DRAIN_GRACE_MS,
      drainBatchSize: e.DRAIN_BATCH_SIZE,
    },
  });
}
