import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { isIP } from 'node:net';
import { MAX_SECRET_LENGTH } from '../keys/key-store';
import type { HistoryOverride, KeyLimits } from '../keys/key-store';
import { MAX_WEBHOOK_QUEUE_EVENTS, WEBHOOK_EVENTS } from '../webhooks/webhooks';
import type { WebhookConfig } from '../webhooks/webhooks';
import { isValidApiKey } from '../names/api-key';
import { APP_ID_RULE, isValidAppId } from '../names/app-id';
import { domainProblem } from '../names/domain';
import { privateWebhookUrlProblem } from '../webhooks/private-addresses';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const nonNegativeInt = z.coerce.number().int().min(0);

/** An allowed domain (names/domain.ts), stored in lower case. */
const domain = z.string().transform((value, ctx) => {
  const problem = domainProblem(value);
  if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
  return value.toLowerCase();
});

/** Upper bound of `HISTORY_SIZE` and of a key's `history.size`: publications kept per topic. */
export const MAX_HISTORY_SIZE = 10_000;
/** Upper bound of `HISTORY_TTL_SECONDS` and of a key's `history.ttlSeconds` (one week). */
export const MAX_HISTORY_TTL_SECONDS = 7 * 24 * 3600;

/** Bounds of `HISTORY_MAX_BYTES_PER_CHANNEL`: bytes of stored publications per topic. */
export const MIN_HISTORY_BYTES = 1024;
export const MAX_HISTORY_BYTES = 1024 * 1024 * 1024;

const historySize = z.coerce.number().int().min(0).max(MAX_HISTORY_SIZE);
const historyTtl = z.coerce.number().int().positive().max(MAX_HISTORY_TTL_SECONDS);

/** A key's override of the history retention (`history` in its record); absent fields use the config's. */
export const historyOverride = z
  .object({ size: historySize.optional(), ttlSeconds: historyTtl.optional() })
  .strict()
  .transform(({ size, ttlSeconds }): HistoryOverride => ({
    ...(size !== undefined ? { size } : {}),
    ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
  }));

/** Whether `text` is an absolute `http:` or `https:` URL (the only webhook targets). */
export function isWebhookUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** A key's webhook (`webhook` in its record and in `SWITCHBOARD_KEYS`). */
export const webhookConfig = z
  .object({
    url: z.string().refine(isWebhookUrl, 'url must be an http:// or https:// URL'),
    events: z
      .array(z.enum(WEBHOOK_EVENTS))
      .min(1, 'events must list at least one event (omit it for the default)')
      .optional(),
  })
  .strict()
  .transform(({ url, events }): WebhookConfig => ({
    url,
    ...(events ? { events: [...new Set(events)] } : {}),
  }));

const quota = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A key's quotas (`limits` in its record); absent fields use the config's defaults, 0 is unlimited. */
export const keyLimits = z
  .object({
    connections: quota.optional(),
    apiRequestsPerSecond: quota.optional(),
    publishesPerSecond: quota.optional(),
    messagesPerDay: quota.optional(),
  })
  .strict()
  .transform((limits): KeyLimits => {
    const out: Record<string, number> = {};
    for (const [name, value] of Object.entries(limits)) if (value !== undefined) out[name] = value;
    return out as KeyLimits;
  });

/** `TRUSTED_PROXIES`: comma-separated IP addresses or CIDR blocks (`10.0.0.0/8`, `::1`). */
const trustedProxies = z.string().transform((text, ctx) => {
  const entries = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const badBits = bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > maxBits);
    if (family === 0 || badBits || extra !== undefined)
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${entry}" is not an IP address or CIDR block` });
  }
  return entries;
});

const seedKey = z.object({
  key: z.string().refine(isValidApiKey, 'key must be 1 to 128 characters of A-Z a-z 0-9 _ -'),
  secret: z
    .string()
    .min(8, 'secret must be at least 8 characters')
    .max(MAX_SECRET_LENGTH, `secret must be at most ${MAX_SECRET_LENGTH} characters`),
  appId: z.string().refine(isValidAppId, `appId must be ${APP_ID_RULE}`).optional(),
  domains: z.array(domain).default([]),
  clientMessages: z.boolean().default(true),
  forceAuth: z.boolean().default(false),
  /** Pusher's subscription counting (docs/pusher.md, "Subscription counts"); off by default. */
  subscriptionCount: z.boolean().default(false),
  history: historyOverride.optional(),
  webhook: webhookConfig.optional(),
  limits: keyLimits.optional(),
});

const seedKeys = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'is not valid JSON' });
      return z.NEVER;
    }
  })
  .pipe(z.array(seedKey));

const clusterNodes = z.string().transform((text, ctx) => {
  const nodes = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^(.+):(\d{1,5})$/.exec(part);
      if (!match) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${part}" is not host:port` });
      return { host: match?.[1] ?? '', port: Number(match?.[2] ?? 0) };
    });
  if (nodes.length === 0) ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'lists no host:port' });
  return nodes;
});

/**
 * Credentials published in this repository, which anyone can read: the placeholders of
 * k8s/secret.yaml (any `CHANGE-ME`), the example secret of the docs, and the development key of
 * `.env`, which docker-compose.yml allows by setting `SWITCHBOARD_ALLOW_DEV_KEYS=1`.
 */
const DEV_KEY = { key: 'dev-key', secret: 'dev-secret-change-me' };
const EXAMPLE_SECRETS = new Set(['a-long-random-secret']);

/** `CHANGE-ME`, `changeme`… as a word of its own (not inside `exchange-mesh`). */
const PLACEHOLDER = /(?:^|[^a-z])change-?me(?:$|[^a-z])/i;

/** Why a seed must not be used, in one line that says what to do; never echoes a secret. */
function placeholderProblem(
  seed: { key: string; secret: string },
  allowDevKeys: boolean,
): string | undefined {
  if (seed.key === DEV_KEY.key && seed.secret === DEV_KEY.secret) {
    if (allowDevKeys) return undefined;
    return `key "${seed.key}" is the public development key of .env; set SWITCHBOARD_KEYS to a key and secret of your own (or SWITCHBOARD_ALLOW_DEV_KEYS=1 on a development machine)`;
  }
  if (PLACEHOLDER.test(seed.key) || PLACEHOLDER.test(seed.secret) || EXAMPLE_SECRETS.has(seed.secret)) {
    return `key "${seed.key}" has a placeholder ${PLACEHOLDER.test(seed.key) ? 'name' : 'secret'} from the examples (k8s/secret.yaml, docs); replace key and secret with your own, e.g. a secret from \`openssl rand -hex 32\``;
  }
  return undefined;
}

/**
 * Bounds of the Pusher protocol's settings (docs/pusher.md, "Limits"): a presence roster
 * goes whole into every subscriber's `subscription_succeeded` frame, and a socket keeps its
 * identity (`user_info`, sign-in `user_data`, watchlist) for as long as it is open.
 */
export const MAX_PUSHER_PRESENCE_MEMBERS = 10_000;
export const MAX_PUSHER_USER_INFO_BYTES = 16 * 1024;
export const MAX_PUSHER_USER_DATA_BYTES = 64 * 1024;
export const MAX_PUSHER_WATCHLIST_SIZE = 1_000;

const defaultNodeId = (): string => `${hostname()}-${randomBytes(3).toString('hex')}`;

/**
 * Every environment variable the processes read (the README's "Configuration" table). Parsed once by `loadConfig`,
 * frozen, and passed down; nothing else reads `process.env`.
 */
export const configSchema = z
  .object({
    PORT: port.default(4001),
    ACCOUNT_PORT: port.default(4002),
    METRICS_PORT: port.optional(),
    HOST: z.string().min(1).default('0.0.0.0'),
    /** The metrics port's bind address; unset: `HOST`. */
    METRICS_HOST: z.string().min(1).optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
    REDIS_CLUSTER_NODES: clusterNodes.optional(),
    /** Sentinels that name the master (`host:port,…`), instead of REDIS_URL (docs/operations.md). */
    REDIS_SENTINELS: clusterNodes.optional(),
    REDIS_SENTINEL_NAME: z.string().min(1).default('mymaster'),
    REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
    /** The password of the servers the sentinels name (their URL's password with REDIS_URL). */
    REDIS_PASSWORD: z.string().min(1).optional(),
    REDIS_SENTINEL_TLS: z
      .enum(['0', '1', 'false', 'true'], { message: 'must be 1 or 0' })
      .transform((flag) => flag === '1' || flag === 'true')
      .default('0'),
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,32}$/, 'must be 1 to 32 characters of A-Z a-z 0-9 _ . -')
      .default('sb'),
    SWITCHBOARD_KEYS: seedKeys.optional(),
    SWITCHBOARD_ALLOW_DEV_KEYS: z
      .enum(['0', '1', 'false', 'true'], { message: 'must be 1 or 0' })
      .transform((flag) => flag === '1' || flag === 'true')
      .default('0'),
    SWITCHBOARD_DATA_DIR: z.string().min(1).default('.switchboard'),
    NODE_ID: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 characters of A-Z a-z 0-9 _ . -')
      .default(defaultNodeId),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    MAX_MESSAGE_BYTES: positiveInt.default(64 * 1024),
    CLIENT_MESSAGES_PER_SECOND: positiveInt.default(100),
    API_REQUESTS_PER_SECOND: nonNegativeInt.default(0),
    /** Removed (a limit per public key let anyone lock its owner out); refused so a setting is not silently dropped. */
    AUTH_FAILURES_PER_KEY: z.string().optional(),
    AUTH_FAILURES_PER_ADDRESS: nonNegativeInt.default(20),
    AUTH_FAILURE_WINDOW_SECONDS: positiveInt.default(60),
    PUBLISHES_PER_SECOND_PER_KEY: nonNegativeInt.default(0),
    MESSAGES_PER_DAY_PER_KEY: nonNegativeInt.default(0),
    NEW_CONNECTIONS_PER_SECOND_PER_IP: nonNegativeInt.default(0),
    TRUSTED_PROXIES: trustedProxies.default(''),
    JWT_REQUIRE_EXP: z
      .enum(['0', '1', 'false', 'true'], { message: 'must be 1 or 0' })
      .transform((flag) => flag === '1' || flag === 'true')
      .default('0'),
    /** Replaced by `TRUSTED_PROXIES`; refused so an old setting is not silently dropped. */
    TRUST_PROXY: z.string().optional(),
    ROSTER_LIMIT: positiveInt.default(200),
    LOG_SIZE: positiveInt.default(500),
    HISTORY_SIZE: historySize.default(100),
    HISTORY_TTL_SECONDS: historyTtl.default(120),
    HISTORY_MAX_BYTES_PER_CHANNEL: z.coerce
      .number()
      .int()
      .min(MIN_HISTORY_BYTES)
      .max(MAX_HISTORY_BYTES)
      .default(1024 * 1024),
    MAX_CONNECTIONS_PER_NODE: nonNegativeInt.default(0),
    MAX_CONNECTIONS_PER_KEY: nonNegativeInt.default(0),
    MAX_CHANNELS_PER_SOCKET: positiveInt.default(100),
    SLOW_CONSUMER_BYTES: positiveInt.default(1024 * 1024),
    IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(8).max(960).default(60),
    NODE_TIMEOUT_MS: positiveInt.default(15_000),
    HEARTBEAT_INTERVAL_MS: positiveInt.default(3_000),
    KEY_CACHE_MS: nonNegativeInt.default(2_000),
    DRAIN_GRACE_MS: nonNegativeInt.default(10_000),
    DRAIN_BATCH_SIZE: positiveInt.default(500),
    PUSHER_MAX_PRESENCE_MEMBERS: positiveInt.max(MAX_PUSHER_PRESENCE_MEMBERS).default(100),
    PUSHER_CLIENT_EVENTS_PER_SECOND: positiveInt.default(10),
    PUSHER_ACTIVITY_TIMEOUT_SECONDS: z.coerce.number().int().min(5).max(600).default(120),
    PUSHER_PONG_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(120).default(30),
    PUSHER_MAX_USER_INFO_BYTES: positiveInt.max(MAX_PUSHER_USER_INFO_BYTES).default(1024),
    PUSHER_MAX_USER_DATA_BYTES: positiveInt.max(MAX_PUSHER_USER_DATA_BYTES).default(16 * 1024),
    PUSHER_MAX_WATCHLIST_SIZE: positiveInt.max(MAX_PUSHER_WATCHLIST_SIZE).default(100),
    PUSHER_CACHE_TTL_SECONDS: historyTtl.default(1800),
    WEBHOOK_RETRY_SECONDS: positiveInt.default(300),
    WEBHOOK_QUEUE_MAX_EVENTS: positiveInt.max(MAX_WEBHOOK_QUEUE_EVENTS).default(10_000),
    WEBHOOK_QUEUE_MAX_BYTES: positiveInt.default(16 * 1024 * 1024),
    WEBHOOK_DENY_PRIVATE: z
      .enum(['0', '1', 'false', 'true'], { message: 'must be 1 or 0' })
      .transform((flag) => flag === '1' || flag === 'true')
      .default('0'),
  })
  .superRefine((env, ctx) => {
    if (env.REDIS_URL && env.REDIS_CLUSTER_NODES) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['REDIS_CLUSTER_NODES'],
        message: 'set either REDIS_URL or REDIS_CLUSTER_NODES, not both',
      });
    }
    if (env.REDIS_SENTINELS && (env.REDIS_URL || env.REDIS_CLUSTER_NODES)) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['REDIS_SENTINELS'],
        message: 'set one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS',
      });
    }
    (env.SWITCHBOARD_KEYS ?? []).forEach((seed, index) => {
      const problem = placeholderProblem(seed, env.SWITCHBOARD_ALLOW_DEV_KEYS);
      if (problem)
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['SWITCHBOARD_KEYS', index], message: problem });
      const webhookProblem =
        env.WEBHOOK_DENY_PRIVATE && seed.webhook ? privateWebhookUrlProblem(seed.webhook.url) : undefined;
      if (webhookProblem)
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['SWITCHBOARD_KEYS', index, 'webhook', 'url'],
          message: webhookProblem,
        });
    });
    if (env.TRUST_PROXY !== undefined) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['TRUST_PROXY'],
        message:
          'was replaced by TRUSTED_PROXIES: list the addresses of the proxies in front (e.g. TRUSTED_PROXIES=10.0.0.0/8)',
      });
    }
    if (env.AUTH_FAILURES_PER_KEY !== undefined) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['AUTH_FAILURES_PER_KEY'],
        message:
          'was removed: failed authentications are limited per client address only (AUTH_FAILURES_PER_ADDRESS), because API keys are public and a limit per key let anyone lock its owner out; unset AUTH_FAILURES_PER_KEY',
      });
    }
    if (env.HEARTBEAT_INTERVAL_MS * 2 > env.NODE_TIMEOUT_MS) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['NODE_TIMEOUT_MS'],
        message: 'must be at least twice HEARTBEAT_INTERVAL_MS',
      });
    }
  });

export type Env = z.infer<typeof configSchema>;
export type SeedKey = z.infer<typeof seedKey>;
