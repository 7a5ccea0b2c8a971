import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';

/**
 * Whether a command connection can carry calls now, with a listener for every change, and the
 * generation of the server that holds a key (see `generationOf`).
 */
export interface ConnectionHealth {
  isUp(): boolean;
  onChange(listener: (up: boolean) => void): void;
  /**
   * The generation of the master that runs a command on `key` now, read on the connection the
   * command goes out on; undefined while that connection has not been identified (the call
   * must then not be made).
   */
  generation(key: string): string | undefined;
  stop(): void;
}

/**
 * A Redis server's generation: a digest of its `run_id` (new on every start) and, once it was
 * promoted, its `master_replid` (new whenever a replica is promoted), read while it is a master;
 * undefined for a replica. The generation changes with every event after which the server's data
 * may lack writes it acknowledged before: a restart (from a persistence file that may be behind)
 * or a promotion (replication is asynchronous). Topic streams key their position by it
 * (docs/architecture.md, "Failover: no position is given twice").
 *
 * A master that was never promoted since it started also draws a new `master_replid` when its
 * first replica attaches (Redis creates its replication backlog then), with `master_replid2`
 * cleared, and nothing is lost: that change must not change the generation, or processes that
 * read it a second apart would keep a topic's position under two names on one server. A
 * promotion is told apart by `master_replid2`, which then holds the previous master's id.
 */
export function generationOf(info: string): string | undefined {
  const field = (name: string): string | undefined => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
  const runId = field('run_id');
  const replid = field('master_replid');
  if (field('role') !== 'master' || !runId || !replid) return undefined;
  const previous = field('master_replid2');
  const promoted = previous === undefined || !/^0+$/.test(previous);
  return createHash('sha1')
    .update(`${runId}:${promoted ? replid : ''}`)
    .digest('base64url')
    .slice(0, 12);
}

/** Reads a connection's server generation (two sections: Redis 6 takes one per INFO). */
async function readGeneration(client: Redis): Promise<string | undefined> {
  const [server, replication] = await Promise.all([client.info('server'), client.info('replication')]);
  return generationOf(`${server}\n${replication}`);
}

class Health {
  private up = false;
  private readonly listeners: Array<(up: boolean) => void> = [];

  isUp = (): boolean => this.up;

  onChange = (listener: (up: boolean) => void): void => {
    this.listeners.push(listener);
  };

  set(next: boolean): void {
    if (next === this.up) return;
    this.up = next;
    for (const listener of this.listeners) listener(next);
  }
}

const PROBE_INTERVAL_MS = 1000;

/**
 * A standalone connection is up while it is `ready` and its server was identified as a master
 * on this very connection (its generation read after the connection became ready, so no call
 * leaves on a new connection with an older server's generation). The generation is read again
 * every second: a server that turned replica is down, one promoted or changed under a live
 * connection (not restarted: that drops the connection) is reported down and up again, so
 * everything that repairs after an outage runs.
 */
export function standaloneHealth(client: Redis): ConnectionHealth {
  const health = new Health();
  let current: string | undefined;
  /** Bumped on every connection change: a reading that started before one is stale. */
  let connection = 0;
  const identify = (): void => {
    if (client.status !== 'ready') return;
    const at = connection;
    readGeneration(client).then(
      (generation) => {
        if (at !== connection) return;
        if (generation !== current && health.isUp()) health.set(false);
        current = generation;
        health.set(generation !== undefined);
      },
      () => undefined,
    );
  };
  client.on('ready', () => {
    connection++;
    current = undefined;
    identify();
  });
  for (const event of ['close', 'end', 'reconnecting']) {
    client.on(event, () => {
      connection++;
      current = undefined;
      health.set(false);
    });
  }
  identify();
  const timer = setInterval(identify, PROBE_INTERVAL_MS);
  timer.unref();
  return {
    isUp: health.isUp,
    onChange: health.onChange,
    generation: () => current,
    stop: () => clearInterval(timer),
  };
}

const PROBE_TIMEOUT_MS = 2000;

/**
 * A cluster is up while ioredis calls it `ready`, a connection to every master that owns slots
 * exists, and every master answered the latest PING round. ioredis alone keeps a cluster `ready`
 * while masters it has not talked to yet are gone, and drops a dead master's connection without
 * any status change; the probe also connects every master eagerly, so no call waits for a lazy
 * connection.
 */
export function clusterHealth(cluster: Cluster): ConnectionHealth {
  const health = new Health();
  /** `host:port` of each master → its generation, read by the probe; dropped with its connection. */
  const generations = new Map<string, string>();
  // A loss bumps `epoch`, so a probe that started before it cannot report the cluster up.
  let epoch = 0;
  let probing = false;
  let again = false;
  const probe = async (): Promise<void> => {
    if (probing) {
      again = true;
      return;
    }
    probing = true;
    try {
      do {
        again = false;
        const started = epoch;
        const result = await masterRound(cluster, generations).catch(() => 'down' as const);
        if (started !== epoch) continue;
        // A master whose generation changed under a live connection: an outage to listeners.
        if (result === 'changed') health.set(false);
        health.set(result !== 'down');
      } while (again);
    } finally {
      probing = false;
    }
  };
  const probeSoon = (): void => void probe();
  cluster.on('ready', probeSoon);
  cluster.on('+node', (node: Redis) => {
    const address = `${node.options.host}:${node.options.port}`;
    // A new connection may reach another server on that address (restarted): read it again.
    node.on('close', () => generations.delete(address));
    probeSoon();
  });
  cluster.on('-node', (node: Redis) => {
    generations.delete(`${node.options.host}:${node.options.port}`);
    epoch++;
    health.set(false);
    probeSoon();
  });
  for (const event of ['close', 'end', 'reconnecting']) {
    cluster.on(event, () => {
      epoch++;
      health.set(false);
    });
  }
  const timer = setInterval(probeSoon, PROBE_INTERVAL_MS);
  timer.unref();
  if (cluster.status === 'ready') probeSoon();
  return {
    isUp: health.isUp,
    onChange: health.onChange,
    generation: (key) => {
      const owner = cluster.slots[calculateSlot(key)]?.[0];
      return owner === undefined ? undefined : generations.get(owner);
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * One probe of every master: its generation read (which answers for a PING) and its cluster
 * state. 'changed' when a master known before answered with another generation.
 */
async function masterRound(
  cluster: Cluster,
  generations: Map<string, string>,
): Promise<'up' | 'down' | 'changed'> {
  if (cluster.status !== 'ready') return 'down';
  const masters = cluster.nodes('master');
  const connected = new Set(masters.map((node) => `${node.options.host}:${node.options.port}`));
  const owners = new Set<string>();
  for (const slot of cluster.slots) if (slot?.[0]) owners.add(slot[0]);
  if (owners.size === 0 || [...owners].some((owner) => !connected.has(owner))) return 'down';
  try {
    const read = await Promise.all(
      masters.map((node) => withTimeout(servingGeneration(node), PROBE_TIMEOUT_MS)),
    );
    let changed = false;
    let down = false;
    masters.forEach((node, i) => {
      const address = `${node.options.host}:${node.options.port}`;
      const generation = read[i];
      const before = generations.get(address);
      if (generation === undefined) {
        generations.delete(address);
        down = true;
        return;
      }
      if (before !== undefined && before !== generation) changed = true;
      // Only a connection still open answered for its server (a reconnect drops the entry).
      if (node.status === 'ready') generations.set(address, generation);
      else down = true;
    });
    if (down) return 'down';
    return changed ? 'changed' : 'up';
  } catch {
    return 'down';
  }
}

/**
 * A cluster master's generation while it serves its slots (`cluster_state:ok`), else undefined.
 * A master started again refuses keyed commands (CLUSTERDOWN) for a while: Redis holds a
 * restarted master's state at fail for two seconds, and the cluster's state is fail until its
 * nodes agree again. It answers INFO all along, so the generation alone would report it up, and
 * the restore that follows every return would fail against it.
 */
async function servingGeneration(node: Redis): Promise<string | undefined> {
  const [generation, state] = await Promise.all([readGeneration(node), node.call('CLUSTER', 'INFO')]);
  return String(state).includes('cluster_state:ok') ? generation : undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('probe timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
