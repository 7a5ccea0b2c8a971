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
  /** Where the metrics port listens (`METRICS_HOST`, else `host`). */
  readonly metricsHost: string;
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
  /** Channel JWTs must carry `exp` (`JWT_REQUIRE_EXP`); off by default, as PieSocket does. */
  readonly jwtRequireExp: boolean;
  readonly limits: {
    readonly maxMessageBytes: number;
    readonly clientMessagesPerSecond: number;
    /** Per-key quota defaults across the cluster (a key's `limits` overrides them); 0 means unlimited. */
    readonly apiRequestsPerSecond: number;
    readonly publishesPerSecondPerKey: number;
    readonly messagesPerDayPerKey: number;
    /** New WebSocket connections per second from one client address, on each node; 0 means unlimited. */
    readonly newConnectionsPerSecondPerIp: number;
    /** Failed authentications per client address on one process (cluster and account API). */
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
  /**
   * Topic streams (`HISTORY_SIZE`, `HISTORY_TTL_SECONDS`, `HISTORY_MAX_BYTES_PER_CHANNEL`); keys
   * may override the first two.
   */
  readonly history: HistoryRetention;
  readonly webhooks: {
    /** How long an undelivered webhook batch is retried, from its first event's storage. */
    readonly retrySeconds: number;
    /** A key's queue holds at most this many events and bytes; over it the oldest are dropped. */
    readonly queueMaxEvents: number;
    readonly queueMaxBytes: number;
    /** Refuse webhook URLs (when set and at every connection) on private addresses. */
    readonly denyPrivate: boolean;
  };
  /** The Pusher Channels protocol (docs/pusher.md, "Limits"). */
  readonly pusher: {
    /** Distinct users in one presence channel; a subscriber over it is refused. */
    readonly maxPresenceMembers: number;
    /** Client events one socket may send per second; over it, error 4301 and the event is dropped. */
    readonly clientEventsPerSecond: number;
    /** Sent in `pusher:connection_established`: seconds of silence before either side pings. */
    readonly activityTimeoutSeconds: number;
    /** Seconds the gateway waits for a `pusher:pong` after its `pusher:ping` before closing with 4201. */
    readonly pongTimeoutSeconds: number;
    /**
     * Seconds a cache channel's last event is kept after it was published (Pusher keeps it 30
     * minutes): the channel's history lives at least this long (`historyRetention`).
     */
    readonly cacheTtlSeconds: number;
    /**
     * What a backend's authorization may make a socket carry, in bytes of JSON text and user ids
     * (the shape of the gateway's `IdentityLimits`). `maxChannelDataBytes` is `user_info`'s limit
     * plus 1 KiB for the user id and the JSON around them.
     */
    readonly identity: {
      readonly maxChannelDataBytes: number;
      readonly maxUserInfoBytes: number;
      readonly maxUserDataBytes: number;
      readonly maxWatchlistSize: number;
    };
  };
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
    metricsHost: e.METRICS_HOST ?? e.HOST,
    redis,
    redisPrefix: e.REDIS_PREFIX,
    seedKeys: e.SWITCHBOARD_KEYS ?? [],
    dataDir: e.SWITCHBOARD_DATA_DIR,
    nodeId: e.NODE_ID,
    logLevel: e.LOG_LEVEL,
    trustedProxies: e.TRUSTED_PROXIES,
    jwtRequireExp: e.JWT_REQUIRE_EXP,
    limits: {
      maxMessageBytes: e.MAX_MESSAGE_BYTES,
      clientMessagesPerSecond: e.CLIENT_MESSAGES_PER_SECOND,
      apiRequestsPerSecond: e.API_REQUESTS_PER_SECOND,
      publishesPerSecondPerKey: e.PUBLISHES_PER_SECOND_PER_KEY,
      messagesPerDayPerKey: e.MESSAGES_PER_DAY_PER_KEY,
      newConnectionsPerSecondPerIp: e.NEW_CONNECTIONS_PER_SECOND_PER_IP,
      authFailures: {
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
    history: {
      size: e.HISTORY_SIZE,
      ttlSeconds: e.HISTORY_TTL_SECONDS,
      maxBytes: e.HISTORY_MAX_BYTES_PER_CHANNEL,
    },
    webhooks: {
      retrySeconds: e.WEBHOOK_RETRY_SECONDS,
      queueMaxEvents: e.WEBHOOK_QUEUE_MAX_EVENTS,
      queueMaxBytes: e.WEBHOOK_QUEUE_MAX_BYTES,
      denyPrivate: e.WEBHOOK_DENY_PRIVATE,
    },
    pusher: {
      maxPresenceMembers: e.PUSHER_MAX_PRESENCE_MEMBERS,
      clientEventsPerSecond: e.PUSHER_CLIENT_EVENTS_PER_SECOND,
      activityTimeoutSeconds: e.PUSHER_ACTIVITY_TIMEOUT_SECONDS,
      pongTimeoutSeconds: e.PUSHER_PONG_TIMEOUT_SECONDS,
      cacheTtlSeconds: e.PUSHER_CACHE_TTL_SECONDS,
      identity: {
        maxChannelDataBytes: e.PUSHER_MAX_USER_INFO_BYTES + 1024,
        maxUserInfoBytes: e.PUSHER_MAX_USER_INFO_BYTES,
        maxUserDataBytes: e.PUSHER_MAX_USER_DATA_BYTES,
        maxWatchlistSize: e.PUSHER_MAX_WATCHLIST_SIZE,
      },
    },
    cluster: {
      nodeTimeoutMs: e.NODE_TIMEOUT_MS,
      heartbeatIntervalMs: e.HEARTBEAT_INTERVAL_MS,
      keyCacheMs: e.KEY_CACHE_MS,
      drainGraceMs: e.DRAIN_GRACE_MS,
      drainBatchSize: e.DRAIN_BATCH_SIZE,
    },
  });
}
