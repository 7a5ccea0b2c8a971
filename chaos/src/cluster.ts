import { randomBytes } from 'node:crypto';
import {
  BalancedCluster,
  fixedFreePort,
  startRedisCluster,
  startRedisSentinelGroup,
  startSwitchboardProcess,
  startTcpProxy,
  waitFor,
} from '@switchboard/harness';
import type {
  ClusterGround,
  RedisClusterHandle,
  RedisClusterNode,
  RedisServer,
  SwitchboardProcess,
} from '@switchboard/harness';
import { GATEWAYS } from './plan';
import type { Gateway } from './plan';

/**
 * The cluster under chaos: the balanced topology of @switchboard/harness (one Redis, three
 * gateway processes on fixed ports, HAProxy rendered from the shipped deploy/haproxy.cfg in
 * front of them; a gateway restarts on its port under its NODE_ID, as `docker compose restart
 * gwN` does), plus the account API process, each gateway's metrics port and Redis on a fixed
 * port so it can be restarted. Every process is kept with what the schedule did to it, so the
 * end of the run can tell a crash from a kill.
 */

/** A failover done: the master SIGKILLed and the replica promoted in its place (their ports). */
export interface FailedOver {
  readonly from: number;
  readonly to: number;
}

/** Redis that can fail over: `failover` SIGKILLs the primary and resolves once a replica serves. */
export interface FailoverRedis extends RedisServer {
  failover(): Promise<FailedOver>;
}

/**
 * A Redis Cluster as the run's Redis: `nodes` for the processes (`REDIS_CLUSTER_NODES`) and the
 * run's own checks; `kill`/`restart` act on every node (the schedule's Redis restart), `failover`
 * on one master.
 */
export interface ChaosRedisCluster extends FailoverRedis {
  readonly nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>;
  readonly nodesEnv: string;
  /**
   * Resolves once every node runs and each master has a replica in sync (the killed masters are
   * back as replicas); rejects after `timeoutMs` with the topology it saw.
   */
  settled(timeoutMs: number): Promise<string>;
}

export const isRedisCluster = (redis: RedisServer): redis is ChaosRedisCluster => 'nodesEnv' in redis;

const lowestSlot = (node: RedisClusterNode): number => Math.min(...node.slots.map(([from]) => from));

/**
 * Three masters with one replica each (`redis-cli --cluster create --cluster-replicas 1`). A
 * failover SIGKILLs a master once its replica is in sync, waits until the cluster promoted the
 * replica (it serves as a master and the cluster state is ok again), and starts the killed node
 * again on its port: it rejoins from its nodes.conf, empty, and the cluster makes it the new
 * master's replica, ready for a later failover of that master. The victims take turns: the
 * master of `firstSlotOf`'s slot first (the key's counts, presence and quotas live there), then
 * the others by their lowest slot.
 */
async function startChaosRedisCluster(firstSlotOf: string): Promise<ChaosRedisCluster> {
  const handle: RedisClusterHandle = await startRedisCluster({ replicas: 1 });
  const first = handle.nodes[0]!;
  let failovers = 0;
  let down = false;
  const masters = async (): Promise<RedisClusterNode[]> => {
    const slot = await handle.keySlot(firstSlotOf);
    const list = (await handle.topology())
      .filter((node) => node.role === 'master' && !node.failing && node.slots.length > 0)
      .sort((a, b) => lowestSlot(a) - lowestSlot(b));
    const at = list.findIndex((node) => node.slots.some(([from, to]) => slot >= from && slot <= to));
    return [...list.slice(at), ...list.slice(0, at)];
  };
  return {
    nodes: handle.nodes,
    nodesEnv: handle.nodesEnv,
    url: `redis://${first.host}:${first.port}`,
    port: first.port,
    get pid() {
      return undefined;
    },
    kill: async () => {
      down = true;
      await handle.kill();
    },
    restart: async () => {
      await handle.restart();
      down = false;
    },
    stop: () => handle.stop(),
    freeze: () => {
      throw new Error('a Redis Cluster run freezes no node');
    },
    thaw: () => undefined,
    failover: async () => {
      if (down) throw new Error('the Redis Cluster is down');
      const list = await masters();
      const victim = list[failovers++ % list.length]!;
      // The replica of the moment (the first failover of a master: the one created with it).
      let replica: RedisClusterNode | undefined;
      await waitFor(
        `a replica of the master on :${victim.port} in sync`,
        async () => {
          const rows = await handle.topology(victim.port);
          replica = rows.find((row) => row.masterId === victim.id && !row.failing);
          return replica !== undefined && (await handle.inSync(replica.port));
        },
        30_000,
        100,
      );
      await handle.killNode(victim.port);
      await waitFor(
        `the cluster promotes :${replica!.port} (the replica of :${victim.port})`,
        () => handle.servesAsMaster(replica!.port),
        30_000,
        50,
      );
      await handle.restartNode(victim.port);
      return { from: victim.port, to: replica!.port };
    },
    settled: async (timeoutMs) => {
      let seen = 'no node answered';
      await waitFor(
        'every Redis Cluster node up, each master with a replica in sync',
        async () => {
          const rows = await handle.topology().catch(() => []);
          const masters = rows.filter((row) => row.role === 'master' && row.slots.length > 0);
          const pairs = masters.map((master) => ({
            master,
            replica: rows.find((row) => row.masterId === master.id),
          }));
          seen = pairs
            .map(({ master, replica }) => `:${master.port} ← ${replica ? `:${replica.port}` : 'no replica'}`)
            .join(', ');
          if (rows.length !== handle.nodes.length || rows.some((row) => row.failing)) return false;
          if (masters.length !== 3) return false;
          for (const { replica } of pairs) if (!replica || !(await handle.inSync(replica.port))) return false;
          return true;
        },
        timeoutMs,
        200,
      ).catch((error: Error) => {
        throw new Error(`${error.message}: ${seen}`);
      });
      return seen;
    },
  };
}

/**
 * A primary, a replica and three sentinels behind one endpoint that follows the sentinels'
 * master (as a managed Redis's does), so every process, the run's own checks included, keeps
 * one `REDIS_URL`. A failover SIGKILLs the master; the sentinels promote the replica; the old
 * master is started again (empty) and the sentinels make it the new master's replica, ready for
 * the next failover. `kill`/`restart` (the schedule's Redis restart) act on the master of the
 * moment.
 */
async function startFailoverRedis(): Promise<FailoverRedis> {
  const group = await startRedisSentinelGroup();
  const proxy = await startTcpProxy(group.primary.port);
  let master = group.primary;
  let killed: RedisServer | undefined;
  const servers = [group.primary, group.replica];
  const follow = setInterval(() => {
    void group.masterPort().then((port) => {
      const named = servers.find((server) => server.port === port);
      if (named && named !== master) {
        master = named;
        proxy.retarget(named.port);
      }
    });
  }, 100);
  follow.unref();
  const inSync = (server: RedisServer): Promise<void> =>
    waitFor(`the replica on :${server.port} in sync`, () => group.inSync(server.port), 20_000, 100);
  return {
    get url() {
      return `redis://127.0.0.1:${proxy.port}`;
    },
    port: proxy.port,
    get pid() {
      return master.pid;
    },
    kill: async () => {
      killed = master;
      await master.kill();
    },
    restart: async () => {
      await (killed ?? master).restart();
      killed = undefined;
    },
    stop: async () => {
      clearInterval(follow);
      await proxy.close();
      await group.stop();
    },
    freeze: () => master.freeze(),
    thaw: () => master.thaw(),
    failover: async () => {
      const victim = master;
      const survivor = servers.find((server) => server !== victim)!;
      await inSync(survivor);
      await victim.kill();
      await waitFor(`the sentinels promote :${survivor.port}`, async () => master === survivor, 30_000, 50);
      await victim.restart();
      return { from: victim.port, to: survivor.port };
    },
  };
}

export const CLUSTER_TIMING = {
  /** The gateways' DRAIN_GRACE_MS. */
  drainGraceMs: 2000,
  /** NODE_TIMEOUT_MS: a SIGKILLed gateway's presence and counts are gone within this. */
  nodeTimeoutMs: 3000,
  heartbeatIntervalMs: 500,
  /** HAProxy's health-check interval. */
  checkIntervalMs: 250,
} as const;

/**
 * The line a gateway prints when it cannot start because Redis is down (docs/operations.md):
 * `Redis at …`, `Redis Cluster at …`, `Redis master … of the sentinels at …`.
 */
const REDIS_UNREACHABLE_AT_START = /Redis .* is unreachable/;

/** One process the run started, and what the run did to it. */
export interface Incarnation {
  readonly role: 'gateway' | 'account-api';
  readonly name: string;
  readonly proc: SwitchboardProcess;
  readonly startedAt: number;
  /** The signal the schedule sent it, when it did. */
  signal?: { readonly name: 'SIGKILL' | 'SIGTERM'; readonly at: number };
  /** A SIGTERMed process still draining was SIGKILLed at this time. */
  killedMidDrainAt?: number;
  exit?: { readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly at: number };
  /** It exited at start because Redis was down (documented: a start that must write to Redis fails). */
  refusedStart?: boolean;
}

export class ChaosCluster extends BalancedCluster {
  readonly incarnations: Incarnation[] = [];
  /** The running incarnation of each gateway; absent while it is down. */
  readonly live = new Map<Gateway, Incarnation>();
  private account: Incarnation | undefined;
  /** Resolves when Redis is up again; undefined while it is up. */
  private redisBack: Promise<void> | undefined;
  private redisBackResolve: (() => void) | undefined;
  /** Redis processes the schedule killed (the first one, then one per restart). */
  redisRestarts = 0;
  refusedStarts = 0;

  private constructor(
    ground: ClusterGround,
    readonly metricsPorts: Readonly<Record<Gateway, number>>,
    readonly accountPort: number,
    private readonly log: (line: string) => void,
    key: { key: string; secret: string },
  ) {
    super(
      {
        names: GATEWAYS,
        env: { HOST: '127.0.0.1', LOG_LEVEL: 'info' },
        gatewayEnv: (name) => ({
          METRICS_PORT: String(metricsPorts[name as Gateway]),
          NODE_TIMEOUT_MS: String(CLUSTER_TIMING.nodeTimeoutMs),
          HEARTBEAT_INTERVAL_MS: String(CLUSTER_TIMING.heartbeatIntervalMs),
          DRAIN_GRACE_MS: String(CLUSTER_TIMING.drainGraceMs),
          // Generous: recovery is tested by catching up, not by the retention limit.
          HISTORY_SIZE: '1000',
        }),
        checkIntervalMs: CLUSTER_TIMING.checkIntervalMs,
        // Restarted many times on its port: a fixed port, which no outgoing connection can take meanwhile.
        redisOnFixedPort: true,
        ...(isRedisCluster(ground.redis) ? { redisEnv: { REDIS_CLUSTER_NODES: ground.redis.nodesEnv } } : {}),
        key,
        prefix: `chaos${randomBytes(3).toString('hex')}`,
        readyTimeoutMs: 30_000,
        rotationTimeoutMs: 20_000,
      },
      ground,
    );
  }

  /**
   * `failover`: Redis fails over (Sentinel; with `redisCluster`, a master of the cluster).
   * `redisCluster`: three masters with one replica each (`REDIS_CLUSTER_NODES`), not one server.
   */
  static async launch(
    log: (line: string) => void,
    options: { failover?: boolean; redisCluster?: boolean } = {},
  ): Promise<ChaosCluster> {
    const metricsPorts = {} as Record<Gateway, number>;
    const key = { key: `chaos${randomBytes(5).toString('hex')}`, secret: randomBytes(16).toString('hex') };
    const ground = await BalancedCluster.ground({
      names: GATEWAYS,
      redisOnFixedPort: true,
      ...(options.redisCluster
        ? // The key's counts, presence and quotas share its hash tag: its master fails first.
          { startRedis: () => startChaosRedisCluster(`{${key.key}}`) }
        : options.failover
          ? { startRedis: startFailoverRedis }
          : {}),
    });
    for (const name of GATEWAYS) metricsPorts[name] = await fixedFreePort();
    const cluster = new ChaosCluster(ground, metricsPorts, await fixedFreePort(), log, key);
    await cluster.open();
    try {
      await cluster.startAccountApi();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get accountUrl(): string {
    return `http://127.0.0.1:${this.accountPort}`;
  }

  get redisUp(): boolean {
    return this.redisBack === undefined;
  }

  private incarnation(role: Incarnation['role'], name: string, proc: SwitchboardProcess): Incarnation {
    const incarnation: Incarnation = { role, name, proc, startedAt: Date.now() };
    this.incarnations.push(incarnation);
    void proc.exited.then(({ code, signal }) => {
      incarnation.exit = { code, signal, at: Date.now() };
    });
    return incarnation;
  }

  /**
   * Starts a gateway on its port and waits until it is ready. A start while Redis is down exits
   * with "Redis … is unreachable" (it must apply SWITCHBOARD_KEYS): like a supervisor, try again
   * once Redis is back.
   */
  override async startGateway(name: string): Promise<SwitchboardProcess> {
    for (let attempt = 1; ; attempt++) {
      const proc = this.launchGateway(name);
      const incarnation = this.incarnation('gateway', name, proc);
      try {
        await this.gatewayReady(name, proc);
        this.live.set(name as Gateway, incarnation);
        return proc;
      } catch (error) {
        const exit = await Promise.race([
          proc.exited,
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1000)),
        ]);
        const refused =
          exit?.code === 1 && proc.errorLines.some((line) => REDIS_UNREACHABLE_AT_START.test(line));
        if (!refused || attempt >= 10) {
          proc.kill('SIGKILL');
          throw new Error(`${name} did not start: ${(error as Error).message}`);
        }
        incarnation.refusedStart = true;
        this.refusedStarts++;
        this.log(`${name} refused to start (Redis is down); starting it again once Redis is back`);
        await this.redisBack;
      }
    }
  }

  /** SIGKILL: the node is gone without a word. */
  async killGateway(name: Gateway): Promise<void> {
    const incarnation = this.live.get(name);
    if (!incarnation) throw new Error(`${name} is not running`);
    this.live.delete(name);
    incarnation.signal = { name: 'SIGKILL', at: Date.now() };
    incarnation.proc.kill('SIGKILL');
    await incarnation.proc.exited;
  }

  /**
   * SIGTERM: the node drains and exits; resolves once it exited. With `killAfterMs`, a node still
   * draining then is SIGKILLed, as a supervisor does when its grace period runs out. Resolves
   * whether that happened.
   */
  async terminateGateway(name: Gateway, killAfterMs?: number): Promise<'drained' | 'killed mid-drain'> {
    const incarnation = this.live.get(name);
    if (!incarnation) throw new Error(`${name} is not running`);
    this.live.delete(name);
    incarnation.signal = { name: 'SIGTERM', at: Date.now() };
    incarnation.proc.kill('SIGTERM');
    const timer =
      killAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            if (incarnation.exit) return;
            incarnation.killedMidDrainAt = Date.now();
            incarnation.proc.kill('SIGKILL');
          }, killAfterMs);
    await incarnation.proc.exited;
    clearTimeout(timer);
    return incarnation.killedMidDrainAt === undefined ? 'drained' : 'killed mid-drain';
  }

  /** Redis SIGKILLed: everything in it is lost (no persistence). */
  async killRedis(): Promise<void> {
    this.redisBack = new Promise((resolve) => (this.redisBackResolve = resolve));
    this.redisRestarts++;
    await this.redis.kill();
  }

  /** Failover runs: the primary SIGKILLed, its replica promoted; resolves with the new master's port. */
  async failoverRedis(): Promise<FailedOver> {
    const redis = this.redis as RedisServer | FailoverRedis;
    if (!('failover' in redis)) throw new Error('this run has no replica to fail over to');
    this.redisBack = new Promise((resolve) => (this.redisBackResolve = resolve));
    try {
      return await redis.failover();
    } finally {
      const resolve = this.redisBackResolve;
      this.redisBack = undefined;
      this.redisBackResolve = undefined;
      resolve?.();
    }
  }

  /** Redis started again on its port, empty. */
  async startRedisAgain(): Promise<void> {
    await this.redis.restart();
    const resolve = this.redisBackResolve;
    this.redisBack = undefined;
    this.redisBackResolve = undefined;
    resolve?.();
  }

  private async startAccountApi(): Promise<void> {
    const proc = startSwitchboardProcess(['account-api'], {
      ...this.env,
      ACCOUNT_PORT: String(this.accountPort),
    });
    this.account = this.incarnation('account-api', 'account-api', this.track(proc));
    await proc.waitForLog({ msg: 'ready' }, 30_000);
  }

  /** The account API process (for the end-of-run process check). */
  get accountApi(): Incarnation | undefined {
    return this.account;
  }
}
