import type { HistoryRetention } from '../history/history';
import { configSchema } from './schema';
import type { Env, SeedKey } from './schema';
import type { AuthFailureLimits } from '../auth/auth-failures';

export type RedisTarget =
  { kind: 'standalone'; url: string } | { kind: 'cluster'; nodes: { host: string; port: number }[] };

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
   * One proxy (HAProxy, an Ingress) stands in front and appends the client's address to
   * `X-Forwarded-For`: the last entry is the client address, else the socket's peer.
   */
  readonly trustProxy: boolean;
  readonly limits: {
    readonly maxMessageBytes: number;
    readonly clientMessagesPerSecond: number;
    /** Cluster API requests per second per key on one node; 0 means unlimited. */
    readonly apiRequestsPerSecond: number;
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
  const redis: RedisTarget | undefined = e.REDIS_CLUSTER_NODES
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
    trustProxy: e.TRUST_PROXY,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      clientMessagesPerSecond: e.CLIENT_MESSAGES_PER_SECOND,
      apiRequestsPerSecond: e.API_REQUESTS_PER_SECOND,
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
