import { randomBytes } from 'node:crypto';
import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  createRedisEngine,
  loadConfig,
} from '@switchboard/core';
import type { ApiKeyRecord, Config, DispatcherTiming, Engine, MemoryState, Metrics } from '@switchboard/core';
import { createGateway } from '@switchboard/gateway';
import type { Gateway } from '@switchboard/gateway';

export interface TestGateway {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly httpUrl: string;
  readonly config: Config;
  readonly engine: Engine;
  readonly gateway: Gateway;
  /** `ws://127.0.0.1:<port><path>?<query>` */
  wsUrl(path: string, query?: Record<string, string>): string;
  close(): Promise<void>;
}

export interface StartGatewayOptions {
  /** Extra environment (config variables), e.g. `REDIS_URL`, limits. */
  env?: Record<string, string>;
  /** Memory engine: share state with other test gateways or an account API. */
  memoryState?: MemoryState;
  /** Prometheus instruments to record into. */
  metrics?: Metrics;
  /** Webhook dispatch timings other than the defaults (shorter retries). */
  webhookTiming?: Partial<DispatcherTiming>;
}

/** A real gateway listening on a free port of 127.0.0.1; logs are silent unless LOG_LEVEL is set. */
export async function startGateway(options: StartGatewayOptions = {}): Promise<TestGateway> {
  const config = loadConfig(
    {},
    {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      NODE_ID: `test-${randomBytes(4).toString('hex')}`,
      KEY_CACHE_MS: '0',
      ...options.env,
    },
  );
  const logger = createLogger({ level: config.logLevel, nodeId: config.nodeId });
  const engine = config.redis
    ? await createRedisEngine(config, logger)
    : createMemoryEngine(options.memoryState ?? createMemoryState({ logSize: config.limits.logSize }));
  const gateway = createGateway({
    config,
    engine,
    logger,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.webhookTiming ? { webhookTiming: options.webhookTiming } : {}),
  });
  const port = await gateway.listen();
  const httpUrl = `http://127.0.0.1:${port}`;
  return {
    port,
    httpUrl,
    config,
    engine,
    gateway,
    wsUrl: (path, query = {}) => {
      const search = new URLSearchParams(query).toString();
      return `ws://127.0.0.1:${port}${path}${search ? `?${search}` : ''}`;
    },
    close: async () => {
      await gateway.close();
      await engine.close();
    },
  };
}

/** Stores a key with a known secret (random unless given) and returns it. */
export async function createTestKey(
  engine: Engine,
  options: Partial<ApiKeyRecord> = {},
): Promise<ApiKeyRecord> {
  const record: ApiKeyRecord = {
    key: options.key ?? `k${randomBytes(8).toString('hex')}`,
    secret: options.secret ?? randomBytes(16).toString('hex'),
    domains: options.domains ?? [],
    clientMessages: options.clientMessages ?? true,
    forceAuth: options.forceAuth ?? false,
    createdAt: new Date().toISOString(),
    ...(options.subscriptionCount ? { subscriptionCount: true as const } : {}),
    ...(options.history ? { history: options.history } : {}),
    ...(options.webhook ? { webhook: options.webhook } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  };
  await engine.keys.put(record);
  return record;
}

/** POSTs JSON to the cluster API and returns status and parsed body. */
export async function postJson(
  url: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: JSON.parse(text) as Record<string, unknown>,
    headers: response.headers,
  };
}
