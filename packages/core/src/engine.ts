import { join } from 'node:path';
import type { Config } from './config/load';
import type { Logger } from './logger';
import type { Broker } from './broker/broker';
import { MemoryBroker, MemoryBus } from './broker/broker-memory';
import type { PresenceStore } from './presence/presence-store';
import { MemoryPresenceStore } from './presence/presence-memory';
import type { ConnectionCounts } from './counts/connection-counts';
import { MemoryConnectionCounts } from './counts/counts-memory';
import type { MessageLog } from './logs/message-log';
import { MemoryMessageLog } from './logs/message-log-memory';
import type { KeyStore } from './keys/key-store';
import { MemoryKeyStore } from './keys/key-store-memory';
import type { NodeRegistry } from './nodes/node-registry';
import { MemoryNodeRegistry } from './nodes/node-registry-memory';
import { createRedisEngine } from './redis/redis-engine';

/** Every port a service needs, from one backend. */
export interface Engine {
  readonly kind: 'memory' | 'redis';
  readonly broker: Broker;
  readonly presence: PresenceStore;
  readonly counts: ConnectionCounts;
  readonly logs: MessageLog;
  readonly keys: KeyStore;
  readonly nodes: NodeRegistry;
  /** Whether the backend is reachable now (always true in memory). */
  isAvailable(): boolean;
  /** Called on every change of availability (Redis lost, Redis back). */
  onAvailability(listener: (available: boolean) => void): void;
  /** Called for every backend call that failed (Redis only), for metrics. */
  onCommandError?(listener: () => void): void;
  close(): Promise<void>;
}

/** The memory engine's shared state, so several services in one process see the same data. */
export interface MemoryState {
  bus: MemoryBus;
  presence: MemoryPresenceStore;
  counts: MemoryConnectionCounts;
  logs: MemoryMessageLog;
  keys: MemoryKeyStore;
  nodes: MemoryNodeRegistry;
}

export function createMemoryState(options: { logSize?: number; keysFile?: string } = {}): MemoryState {
  return {
    bus: new MemoryBus(),
    presence: new MemoryPresenceStore(),
    counts: new MemoryConnectionCounts(),
    logs: new MemoryMessageLog(options.logSize),
    keys: new MemoryKeyStore(options.keysFile),
    nodes: new MemoryNodeRegistry(),
  };
}

/** An engine over memory state; each call is one node (its own broker on the shared bus). */
export function createMemoryEngine(state: MemoryState): Engine {
  const broker = new MemoryBroker(state.bus);
  return {
    kind: 'memory',
    broker,
    presence: state.presence,
    counts: state.counts,
    logs: state.logs,
    keys: state.keys,
    nodes: state.nodes,
    isAvailable: () => true,
    onAvailability: () => undefined,
    close: () => broker.close(),
  };
}

export interface EngineDeps {
  logger: Logger;
  /** Memory engine only: share state with other services of this process. */
  memoryState?: MemoryState;
}

/** The one place an implementation is chosen: Redis when configured, memory otherwise. */
export async function createEngine(config: Config, deps: EngineDeps): Promise<Engine> {
  if (config.redis) {
    return createRedisEngine(config, deps.logger);
  }
  const state =
    deps.memoryState ??
    createMemoryState({ logSize: config.limits.logSize, keysFile: join(config.dataDir, 'keys.json') });
  return createMemoryEngine(state);
}
