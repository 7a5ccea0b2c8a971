import { createLogger, createMemoryEngine, createMemoryState, loadConfig } from '@switchboard/core';
import type { ApiKeyRecord, Config, Engine, LogRecord, Topic } from '@switchboard/core';
import { createAccountApi } from '../src';

export const KEY_A: ApiKeyRecord = {
  key: 'key-a',
  secret: 'secret-a-0123456789',
  domains: ['example.com', 'app.example.org'],
  clientMessages: true,
  forceAuth: false,
  createdAt: '2026-01-01T00:00:00.000Z',
};

export const KEY_B: ApiKeyRecord = {
  key: 'key-b',
  secret: 'secret-b-0123456789',
  domains: [],
  clientMessages: false,
  forceAuth: true,
  createdAt: '2026-01-02T00:00:00.000Z',
};

export const authA = { key: KEY_A.key, secret: KEY_A.secret };
export const authB = { key: KEY_B.key, secret: KEY_B.secret };

export const silentLogger = () => createLogger({ level: 'silent' });

export const testConfig = (overrides: Record<string, string> = {}): Config =>
  loadConfig({ ACCOUNT_PORT: '0', HOST: '127.0.0.1', NODE_ID: 'test-node', ...overrides });

const logRecord = (n: number, extra: Partial<LogRecord> = {}): LogRecord => ({
  id: `log-${n}`,
  channel: 'room-1',
  protocol: 'v3',
  source: 'api',
  message: `message ${n}`,
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
  ...extra,
});

/**
 * A memory engine with both keys and data only key A owns: counts on three channels (one only V4,
 * so counts mix protocols), presence members of both protocols, and three log records.
 */
export async function populatedEngine(): Promise<Engine> {
  return populate(createMemoryEngine(createMemoryState()));
}

/** Writes the fixture data through the engine's ports (any engine). */
export async function populate(engine: Engine): Promise<Engine> {
  await engine.keys.put(KEY_A);
  await engine.keys.put(KEY_B);
  const count = async (channel: string, n: number, node = 'node-1') => {
    for (let i = 0; i < n; i += 1) await engine.counts.increment(node, KEY_A.key, channel);
  };
  await count('room-1', 2);
  await count('room-1', 1, 'node-2');
  await count('lobby', 3);
  await count('alpha', 1);
  await count('zeta', 1);
  const topic = (channel: string, protocol: 'v3' | 'v4'): Topic => ({ key: KEY_A.key, protocol, channel });
  await engine.presence.join(
    topic('room-1', 'v3'),
    { connId: 'node-1/1', nodeId: 'node-1', member: { uuid: 'u1', user: 'alice' } },
    1,
  );
  await engine.presence.join(
    topic('room-1', 'v3'),
    { connId: 'node-1/2', nodeId: 'node-1', member: { uuid: 'u2' } },
    2,
  );
  await engine.presence.join(
    topic('room-1', 'v4'),
    { connId: 'node-2/1', nodeId: 'node-2', member: { uuid: 'u3', user: { id: 7, name: 'Bo' } } },
    3,
  );
  await engine.presence.join(
    topic('lobby', 'v4'),
    { connId: 'node-2/2', nodeId: 'node-2', member: { uuid: 'u4', user: 42 } },
    4,
  );
  await engine.logs.append(KEY_A.key, logRecord(1));
  await engine.logs.append(
    KEY_A.key,
    logRecord(2, { protocol: 'v4', source: 'client', uuid: 'u3', user: { id: 7 } }),
  );
  await engine.logs.append(
    KEY_A.key,
    logRecord(3, { channel: 'lobby', message: 'AAEC', binary: true, uuid: 'u1', user: 'alice' }),
  );
  return engine;
}

export async function populatedApp(config: Record<string, string> = {}) {
  const engine = await populatedEngine();
  return { engine, app: createAccountApi({ engine, logger: silentLogger(), config: testConfig(config) }) };
}

/** The port's methods (all, or those in `only`) reject as an unreachable Redis would. */
export function failingPort<T extends object>(port: T, error: () => Error, only?: ReadonlyArray<keyof T>): T {
  return new Proxy(port, {
    get: (target, property, receiver) => {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (only && !only.includes(property as keyof T)) return value.bind(target);
      return () => Promise.reject(error());
    },
  });
}
