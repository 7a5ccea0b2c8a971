import { randomBytes } from 'node:crypto';
import { requireHaproxy, startHaproxy } from './haproxy';
import type { HaproxyServerState, RunningHaproxy } from './haproxy';
import { fixedFreePort } from './ports';
import { startSwitchboardProcess } from './process';
import type { SwitchboardProcess } from './process';
import { startRedis } from './redis-server';
import type { RedisServer } from './redis-server';
import { waitFor } from './wait';

/**
 * The docker-compose topology without containers: one Redis, gateway processes on fixed ports
 * (so a node restarts on its port, as `docker compose restart gwN` or a rolling update does) and
 * HAProxy rendered from the shipped deploy/haproxy.cfg in front of them. Clients and backends
 * talk to the balancer only. The e2e suites use it as it is; the chaos run extends it (it tracks
 * each gateway's incarnations and restarts Redis).
 *
 * Needs `haproxy` (Debian package `haproxy`; .ci/run installs it). Without it, `start` fails
 * (never skips).
 */

/** An API key as the processes are seeded with it (SWITCHBOARD_KEYS). */
export interface ClusterKey {
  readonly key: string;
  readonly secret: string;
}

export interface BalancedClusterOptions {
  /** Gateway names (HAProxy server names and NODE_IDs): gw1, gw2, … */
  readonly names: readonly string[];
  /** Configuration of every process of the cluster, on top of Redis and the key. */
  readonly env?: Readonly<Record<string, string>>;
  /** One gateway's configuration on top of `env`, its host, port and NODE_ID. */
  readonly gatewayEnv?: (name: string) => Readonly<Record<string, string>>;
  /**
   * How the gateways reach Redis instead of the cluster's own server (`REDIS_SENTINELS`… of a
   * sentinel group, a `REDIS_URL` through a proxy); the own server then runs unused.
   */
  readonly redisEnv?: Readonly<Record<string, string>>;
  /** HAProxy's health-check interval (the shipped 2 s is slow for tests). */
  readonly checkIntervalMs?: number;
  /**
   * Redis on a fixed port (it can then be restarted on that port, which no outgoing connection
   * can take meanwhile) rather than on any free one.
   */
  readonly redisOnFixedPort?: boolean;
  /** Starts the cluster's Redis (a failover group behind one endpoint…); one redis-server by default. */
  readonly startRedis?: () => Promise<RedisServer>;
  /** The key every process knows (a random one by default). */
  readonly key?: ClusterKey;
  /** REDIS_PREFIX (a random one by default). */
  readonly prefix?: string;
  /** How long a gateway may take to print `ready`, then to pass its checks (default 15 s, 10 s). */
  readonly readyTimeoutMs?: number;
  readonly rotationTimeoutMs?: number;
}

/** What a cluster holds before any gateway runs: Redis and the ports. */
export interface ClusterGround {
  readonly redis: RedisServer;
  readonly ports: Readonly<Record<string, number>>;
  readonly balancerPort: number;
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

/** The status of a node's own /api/health; 0 when nothing listens (or it does not answer in 2 s). */
export async function healthStatus(port: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(2000) })).status;
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
  /** The one API key every process knows (seeded through SWITCHBOARD_KEYS). */
  readonly key: ClusterKey;
  /** Every process's configuration: also fits other processes of the cluster (account API). */
  readonly env: Record<string, string>;
  /** The latest process of each gateway name. */
  readonly nodes = new Map<string, SwitchboardProcess>();
  readonly names: readonly string[];
  readonly redis: RedisServer;
  readonly ports: Readonly<Record<string, number>>;
  readonly balancerPort: number;
  private readonly processes: SwitchboardProcess[] = [];
  private haproxy: RunningHaproxy | undefined;

  protected constructor(
    protected readonly options: BalancedClusterOptions,
    ground: ClusterGround,
  ) {
    this.names = options.names;
    this.redis = ground.redis;
    this.ports = ground.ports;
    this.balancerPort = ground.balancerPort;
    this.key = options.key ?? {
      key: `k${randomBytes(6).toString('hex')}`,
      secret: randomBytes(16).toString('hex'),
    };
    this.env = {
      ...(options.redisEnv ?? { REDIS_URL: this.redis.url }),
      REDIS_PREFIX: options.prefix ?? `bc${randomBytes(4).toString('hex')}`,
      SWITCHBOARD_KEYS: JSON.stringify([{ key: this.key.key, secret: this.key.secret, domains: [] }]),
      ...options.env,
    };
  }

  /** Redis and a fixed free port for each gateway and for the balancer. */
  protected static async ground(options: BalancedClusterOptions): Promise<ClusterGround> {
    requireHaproxy();
    const ports: Record<string, number> = {};
    for (const name of options.names) ports[name] = await fixedFreePort();
    const balancerPort = await fixedFreePort();
    const redis = options.startRedis
      ? await options.startRedis()
      : await startRedis(options.redisOnFixedPort ? { port: await fixedFreePort() } : {});
    return { redis, ports, balancerPort };
  }

  /** Redis, the gateways (ready) and HAProxy, with every gateway in rotation. */
  static async start(options: BalancedClusterOptions): Promise<BalancedCluster> {
    const cluster = new BalancedCluster(options, await BalancedCluster.ground(options));
    await cluster.open();
    return cluster;
  }

  /** Starts the gateways and HAProxy and waits until all are in rotation; stops all on a failure. */
  protected async open(): Promise<void> {
    try {
      await Promise.all(this.names.map((name) => this.startGateway(name)));
      this.haproxy = await startHaproxy({
        listenPort: this.balancerPort,
        backends: this.names.map((name) => ({ name, port: this.ports[name]! })),
        ...(this.options.checkIntervalMs === undefined
          ? {}
          : { checkIntervalMs: this.options.checkIntervalMs }),
      });
      for (const name of this.names) await this.waitUntilInRotation(name);
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  get prefix(): string {
    return this.env['REDIS_PREFIX']!;
  }

  /** `http://` of the balancer (cluster API). */
  get balancerUrl(): string {
    return `http://127.0.0.1:${this.balancerPort}`;
  }

  /** `ws://` of the balancer. */
  get balancerWsUrl(): string {
    return `ws://127.0.0.1:${this.balancerPort}`;
  }

  /** A WebSocket URL through the balancer. */
  wsUrl(path: string, query: Record<string, string>): string {
    return `${this.balancerWsUrl}${path}?${new URLSearchParams(query).toString()}`;
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

  /** A gateway process on its fixed port, tracked at once (so `stop` can always kill it). */
  protected launchGateway(name: string): SwitchboardProcess {
    const proc = this.track(
      startSwitchboardProcess(['gateway'], {
        ...this.env,
        HOST: '127.0.0.1',
        PORT: String(this.ports[name]),
        NODE_ID: name,
        ...this.options.gatewayEnv?.(name),
      }),
    );
    this.nodes.set(name, proc);
    return proc;
  }

  /** Resolves once `proc` printed `ready` on its gateway's own port. */
  protected async gatewayReady(name: string, proc: SwitchboardProcess): Promise<void> {
    const ready = await proc.waitForLog({ msg: 'ready' }, this.options.readyTimeoutMs);
    if (ready['port'] !== this.ports[name])
      throw new Error(`${name} listens on ${String(ready['port'])}, not ${this.ports[name]}`);
  }

  /** A gateway process on its fixed port, ready. */
  async startGateway(name: string): Promise<SwitchboardProcess> {
    const proc = this.launchGateway(name);
    await this.gatewayReady(name, proc);
    return proc;
  }

  /** The status of a gateway's own /api/health; 0 when nothing listens. */
  health(name: string): Promise<number> {
    return healthStatus(this.ports[name]!);
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
    const timeoutMs = this.options.rotationTimeoutMs ?? 10_000;
    await waitFor(`${name} /api/health 200`, async () => (await this.health(name)) === 200, timeoutMs, 20);
    let seen: HaproxyServerState | string | undefined;
    await waitFor(
      `haproxy sees ${name} UP`,
      async () => hasStatus((seen = await this.serverOrWhyNot(name)), 'UP'),
      timeoutMs,
      20,
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
      20,
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
