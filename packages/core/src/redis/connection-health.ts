import type { Cluster, Redis } from 'ioredis';

/** Whether a command connection can carry calls now, with a listener for every change. */
export interface ConnectionHealth {
  isUp(): boolean;
  onChange(listener: (up: boolean) => void): void;
  stop(): void;
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

/** A standalone connection is up exactly while it is `ready`. */
export function standaloneHealth(client: Redis): ConnectionHealth {
  const health = new Health();
  health.set(client.status === 'ready');
  client.on('ready', () => health.set(true));
  for (const event of ['close', 'end', 'reconnecting']) client.on(event, () => health.set(false));
  return { isUp: health.isUp, onChange: health.onChange, stop: () => undefined };
}

const PROBE_INTERVAL_MS = 1000;
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
        const result = await masterRound(cluster).catch(() => false);
        if (started === epoch) health.set(result);
      } while (again);
    } finally {
      probing = false;
    }
  };
  const probeSoon = (): void => void probe();
  cluster.on('ready', probeSoon);
  cluster.on('+node', probeSoon);
  cluster.on('-node', () => {
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
  return { isUp: health.isUp, onChange: health.onChange, stop: () => clearInterval(timer) };
}

async function masterRound(cluster: Cluster): Promise<boolean> {
  if (cluster.status !== 'ready') return false;
  const masters = cluster.nodes('master');
  const connected = new Set(masters.map((node) => `${node.options.host}:${node.options.port}`));
  const owners = new Set<string>();
  for (const slot of cluster.slots) if (slot?.[0]) owners.add(slot[0]);
  if (owners.size === 0 || [...owners].some((owner) => !connected.has(owner))) return false;
  try {
    await Promise.all(masters.map((node) => withTimeout(node.ping(), PROBE_TIMEOUT_MS)));
    return true;
  } catch {
    return false;
  }
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
