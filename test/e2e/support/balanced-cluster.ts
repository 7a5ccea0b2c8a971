import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '@switchboard/core';
import {
  fixedFreePort,
  requireHaproxy,
  startHaproxy,
  startRedis,
  startSwitchboardProcess,
  waitFor,
} from '@switchboard/harness';
import type {
  HaproxyServerState,
  RedisServer,
  RunningHaproxy,
  SwitchboardProcess,
} from '@switchboard/harness';
import { testKey } from '../support-nodes';

/**
 * The docker-compose topology without containers: one Redis, gateway processes on fixed ports
 * (so a node restarts on its port, as `docker compose restart gwN` or a rolling update does) and
 * HAProxy rendered from the shipped deploy/haproxy.cfg in front of them. Clients and backends
 * talk to the balancer only.
 *
 * Needs `haproxy` (Debian package `haproxy`; .ci/run installs it). Without it, `start` fails
 * (never skips).
 */

export interface BalancedClusterOptions {
  /** Gateway names (HAProxy server names and NODE_IDs): gw1, gw2, … */
  readonly names: readonly string[];
  /** Gateway configuration on top of Redis, the key and the port. */
  readonly env?: Readonly<Record<string, string>>;
  /** HAProxy's health-check interval (the shipped 2 s is slow for tests). */
  readonly checkIntervalMs?: number;
}

export interface HttpAnswer {
  status: number;
  text: string;
  json: unknown;
}

/** A request whose body is read whole; `json` is undefined when the body is not JSON. */
export async function request(url: string, init: RequestInit = {}): Promise<HttpAnswer> {
  const response = await fetch(url, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/** The status of a node's own /api/health; 0 when nothing listens. */
export async function healthStatus(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/api/health`)).status;
  } catch {
    return 0;
  }
}

/** `promise`, or a rejection naming `what` after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const hasStatus = (server: HaproxyServerState | string, status: string): boolean =>
  typeof server !== 'string' && server.status === status;

export class BalancedCluster {
  /** The one API key every gateway knows (seeded through SWITCHBOARD_KEYS). */
  readonly key: ApiKeyRecord = testKey();
  /** Every gateway's configuration: also fits other processes of the cluster (account API). */
  readonly env: Record<string, string>;
  /** The live process of each gateway name. */
  readonly nodes = new Map<string, SwitchboardProcess>();
  private readonly processes: SwitchboardProcess[] = [];

  private constructor(
    readonly names: readonly string[],
    readonly redis: RedisServer,
    readonly ports: Readonly<Record<string, number>>,
    readonly balancerPort: number,
    private haproxy: RunningHaproxy | undefined,
    env: Readonly<Record<string, string>>,
  ) {
    this.env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: `bc${randomBytes(4).toString('hex')}`,
      SWITCHBOARD_KEYS: JSON.stringify([{ key: this.key.key, secret: this.key.secret, domains: [] }]),
      ...env,
    };
  }

  /** Redis, the gateways (ready) and HAProxy, with every gateway in rotation. */
  static async start(options: BalancedClusterOptions): Promise<BalancedCluster> {
    requireHaproxy();
    const ports: Record<string, number> = {};
    for (const name of options.names) ports[name] = await fixedFreePort();
    const balancerPort = await fixedFreePort();
    const redis = await startRedis();
    const cluster = new BalancedCluster(
      options.names,
      redis,
      ports,
      balancerPort,
      undefined,
      options.env ?? {},
    );
    try {
      await Promise.all(options.names.map((name) => cluster.startGateway(name)));
      cluster.haproxy = await startHaproxy({
        listenPort: balancerPort,
        backends: options.names.map((name) => ({ name, port: ports[name]! })),
        ...(options.checkIntervalMs === undefined ? {} : { checkIntervalMs: options.checkIntervalMs }),
      });
      for (const name of options.names) await cluster.waitUntilInRotation(name);
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `http://` of the balancer (cluster API). */
  get balancerUrl(): string {
    return `http://127.0.0.1:${this.balancerPort}`;
  }

  /** A WebSocket URL through the balancer. */
  wsUrl(path: string, query: Record<string, string>): string {
    return `ws://127.0.0.1:${this.balancerPort}${path}?${new URLSearchParams(query).toString()}`;
  }

  /** HAProxy; throws before `start` finished. */
  get balancer(): RunningHaproxy {
    if (!this.haproxy) throw new Error('HAProxy is not running');
    return this.haproxy;
  }

  /** Keeps a process of the cluster (account API…) so `stop` kills it too. */
  track(proc: SwitchboardProcess): SwitchboardProcess {
    this.processes.push(proc);
    return proc;
  }

  /** A gateway process on its fixed port (tracked before it is ready, so `stop` can always kill it). */
  async startGateway(name: string): Promise<SwitchboardProcess> {
    const proc = this.track(
      startSwitchboardProcess(['gateway'], {
        ...this.env,
        HOST: '127.0.0.1',
        PORT: String(this.ports[name]),
        NODE_ID: name,
      }),
    );
    this.nodes.set(name, proc);
    const ready = await proc.waitForLog({ msg: 'ready' });
    expect(ready['port']).toBe(this.ports[name]);
    return proc;
  }

  /** One server of the balancer's `gateways` backend as HAProxy sees it now. */
  async server(name: string): Promise<HaproxyServerState> {
    const found = (await this.balancer.servers()).find((s) => s.name === name);
    if (!found) throw new Error(`haproxy has no server ${name}`);
    return found;
  }

  /**
   * For polling: the server's state, or why HAProxy did not tell (its runtime API answers late
   * on a starved machine; the next poll asks again).
   */
  private async serverOrWhyNot(name: string): Promise<HaproxyServerState | string> {
    try {
      return await this.server(name);
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** Health 200 on the node itself, then HAProxy's check passes too: new clients may land on it. */
  async waitUntilInRotation(name: string): Promise<void> {
    const port = this.ports[name]!;
    await waitFor(`${name} /api/health 200`, async () => (await healthStatus(port)) === 200, 10_000);
    let seen: HaproxyServerState | string | undefined;
    await waitFor(
      `haproxy sees ${name} UP`,
      async () => hasStatus((seen = await this.serverOrWhyNot(name)), 'UP'),
      10_000,
    ).catch((error: Error) => {
      // L7TOUT: the check got no answer at all (uWS does not answer HTTP/1.0 or a request without Host).
      throw new Error(`${error.message}; haproxy reports ${JSON.stringify(seen)}`);
    });
  }

  /** Waits until HAProxy has noticed that `name` is gone (so a later "UP" is a new process's). */
  async waitUntilOutOfRotation(name: string): Promise<void> {
    await waitFor(
      `haproxy marks ${name} DOWN`,
      async () => hasStatus(await this.serverOrWhyNot(name), 'DOWN'),
      5000,
    );
  }

  /** POSTs to the cluster API through the balancer, with the key and secret. */
  clusterApi(path: string, body: Record<string, unknown>, init: RequestInit = {}): Promise<HttpAnswer> {
    return request(`${this.balancerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: this.key.key, secret: this.key.secret, ...body }),
      ...init,
    });
  }

  /** Kills every process, HAProxy and Redis. */
  async stop(): Promise<void> {
    for (const proc of this.processes) proc.kill('SIGKILL');
    await Promise.all(this.processes.map((proc) => proc.exited));
    await this.haproxy?.close();
    await this.redis.stop();
  }
}

export { Waiters } from '@switchboard/harness';
