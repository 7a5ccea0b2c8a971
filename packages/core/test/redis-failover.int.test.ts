import { Redis } from 'ioredis';
import { loadConfig } from '../src/config/load';
import type { Engine } from '../src/engine';
import type { StreamPosition } from '../src/history/history';
import { createLogger } from '../src/logger';
import { createRedisEngine } from '../src/redis/redis-engine';
import type { RedisBroker } from '../src/broker/broker-redis';
import type { Topic } from '../src/types';
import calculateSlot from 'cluster-key-slot';
import type { Publication } from '../src/broker/broker';
import { redisKeys } from '../src/redis/keys';
import { startRedisCluster, startRedisSentinelGroup, startTcpProxy, waitFor } from '@switchboard/harness';
import type { RedisClusterHandle, RedisSentinelGroup, TcpProxy } from '@switchboard/harness';
import { unique } from './support/wait';

/**
 * A failover that loses acknowledged writes (replication is asynchronous): the replica is cut
 * off (its link killed on the primary, the process stopped so it cannot resync), a burst is
 * published and acknowledged, the primary is SIGKILLed, and the sentinels promote the replica,
 * which never saw the burst. No (epoch, offset) may then be given twice, and a read from where a
 * client of the burst stands must not carry on in the old epoch.
 */
describe.each(['sentinel', 'single URL'] as const)('Redis failover with lost writes (%s)', (mode) => {
  let group: RedisSentinelGroup;
  let proxy: TcpProxy | undefined;
  let engine: Engine & { broker: RedisBroker };

  beforeAll(async () => {
    group = await startRedisSentinelGroup();
    const env: Record<string, string> = { REDIS_PREFIX: unique('fo'), NODE_ID: 'node-f' };
    if (mode === 'sentinel') {
      env.REDIS_SENTINELS = group.sentinelsEnv;
      env.REDIS_SENTINEL_NAME = group.name;
    } else {
      proxy = await startTcpProxy(group.primary.port);
      env.REDIS_URL = `redis://127.0.0.1:${proxy.port}`;
    }
    engine = await createRedisEngine(loadConfig(env), createLogger({ level: 'silent' }));
  }, 30_000);

  afterAll(async () => {
    await engine?.close();
    await proxy?.close();
    await group?.stop();
  });

  it('starts new epochs on the promoted replica: no position is given twice', async () => {
    const topic: Topic = { key: unique('key'), protocol: 'v4', channel: 'room' };
    const retention = { size: 100, ttlSeconds: 60 };
    const publish = (body: string): Promise<StreamPosition | undefined> =>
      engine.broker.publish({ topic, body, origin: 'node-f' }, retention);
    const given = new Map<string, string>();
    const record = (body: string, position: StreamPosition | undefined): void => {
      const at = `${position?.epoch}/${position?.offset}`;
      expect(given.get(at) ?? body).toBe(body);
      given.set(at, body);
    };
    for (let i = 1; i <= 20; i++) record(`a${i}`, await publish(`a${i}`));
    const primary = new Redis(group.primary.port, '127.0.0.1');
    const replica = new Redis(group.replica.port, '127.0.0.1', { lazyConnect: true });
    replica.on('error', () => undefined);
    try {
      // Everything so far is on the replica; then it is cut off.
      expect(await primary.call('WAIT', '1', '5000')).toBe(1);
      group.replica.freeze();
      await primary.call('CLIENT', 'KILL', 'TYPE', 'replica');
      const burst: StreamPosition[] = [];
      for (let i = 1; i <= 10; i++) {
        const position = await publish(`b${i}`);
        record(`b${i}`, position);
        burst.push(position!);
      }
      await primary.set('burst-marker', '1');
      const last = burst[burst.length - 1]!;
      expect(last.offset).toBe(30);

      await group.primary.kill();
      group.replica.thaw();
      const deadline = Date.now() + 30_000;
      while ((await group.masterPort()) !== group.replica.port) {
        if (Date.now() > deadline) throw new Error('the sentinels did not promote the replica');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      proxy?.retarget(group.replica.port);
      await replica.connect();
      // The burst is really gone from the new master.
      expect(await replica.get('burst-marker')).toBeNull();

      await waitFor('the engine back on the new master', () => engine.isAvailable(), 20_000);
      // A client that holds the burst's last position reads on: never more of that epoch.
      let page: Awaited<ReturnType<Engine['history']['read']>> | undefined;
      while (!page) {
        page = await engine.history.read(topic, { since: last.offset, limit: 100 }).catch(() => undefined);
      }
      expect(page.epoch).not.toBe(last.epoch);
      for (let i = 1; i <= 15; i++) {
        const position = await publish(`c${i}`);
        expect(position?.epoch).not.toBe(last.epoch);
        record(`c${i}`, position);
      }
    } finally {
      primary.disconnect();
      replica.disconnect();
    }
  }, 60_000);
});

/**
 * The same on Redis Cluster: the master of the topic's slot loses its replica's link and a burst,
 * is SIGKILLed, and the cluster promotes the replica. The sharded subscription follows the slot
 * to the new master.
 */
describe('Redis Cluster master failover with lost writes', () => {
  let cluster: RedisClusterHandle;
  let engine: Engine & { broker: RedisBroker };
  const prefix = unique('cfo');

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 1 });
    const env = { REDIS_CLUSTER_NODES: cluster.nodesEnv, REDIS_PREFIX: prefix, NODE_ID: 'node-c' };
    engine = await createRedisEngine(loadConfig(env), createLogger({ level: 'silent' }));
  }, 60_000);

  afterAll(async () => {
    await engine?.close();
    await cluster?.stop();
  });

  it('starts new epochs on the promoted replica and keeps delivering on its shard channel', async () => {
    const topic: Topic = { key: unique('key'), protocol: 'v4', channel: 'room' };
    const received: Publication[] = [];
    engine.broker.setHandlers({ message: (p) => received.push(p), control: () => undefined });
    await engine.broker.subscribe(topic);
    const retention = { size: 100, ttlSeconds: 60 };
    const publish = (body: string): Promise<StreamPosition | undefined> =>
      engine.broker.publish({ topic, body, origin: 'node-c' }, retention);
    const given = new Map<string, string>();
    const record = (body: string, position: StreamPosition | undefined): void => {
      const at = `${position?.epoch}/${position?.offset}`;
      expect(given.get(at) ?? body).toBe(body);
      given.set(at, body);
    };
    for (let i = 1; i <= 20; i++) record(`a${i}`, await publish(`a${i}`));

    // The master of the topic's slot and its replica, from CLUSTER NODES.
    const slot = calculateSlot(redisKeys(prefix).historyStream(topic));
    const any = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
    // The replicas become known to every node by gossip, a moment after the cluster is ok.
    let owner: string[] | undefined;
    let replicaRow: string[] | undefined;
    const known = Date.now() + 15_000;
    while (!replicaRow && Date.now() < known) {
      const table = ((await any.call('CLUSTER', 'NODES')) as string).trim().split('\n');
      const rows = table.map((line) => line.split(' '));
      owner = rows.find(
        (row) =>
          row[2]!.includes('master') &&
          row.slice(8).some((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return slot >= from! && slot <= to!;
          }),
      );
      replicaRow = rows.find((row) => owner && row[3] === owner[0] && row[2]!.includes('slave'));
      if (!replicaRow) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    any.disconnect();
    if (!owner || !replicaRow) throw new Error('no replica of the topic slot’s master');
    const portOf = (row: string[]): number => Number(row[1]!.split('@')[0]!.split(':')[1]);
    const masterPort = portOf(owner);
    const replicaPort = portOf(replicaRow);

    const master = new Redis(masterPort, '127.0.0.1');
    const replica = new Redis(replicaPort, '127.0.0.1', { lazyConnect: true });
    replica.on('error', () => undefined);
    try {
      await replica.connect();
      await waitFor(
        'the replica in sync',
        async () => ((await replica.info('replication')) as string).includes('master_link_status:up'),
        15_000,
        50,
      );
      const info = (await master.info('replication')) as string;
      expect([info, await master.call('WAIT', '1', '5000')]).toEqual([info, 1]);
      cluster.signal(replicaPort, 'SIGSTOP');
      await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
      const burst: StreamPosition[] = [];
      for (let i = 1; i <= 10; i++) {
        const position = await publish(`b${i}`);
        record(`b${i}`, position);
        burst.push(position!);
      }
      const marker = `marker{${topic.key}|v4|room}`;
      await master.set(marker, '1');
      const last = burst[burst.length - 1]!;
      cluster.signal(masterPort, 'SIGKILL');
      cluster.signal(replicaPort, 'SIGCONT');
      const deadline = Date.now() + 30_000;
      while (!((await replica.info('replication')) as string).includes('role:master')) {
        if (Date.now() > deadline) throw new Error('the cluster did not promote the replica');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await replica.call('GET', marker).catch(() => null)).toBeNull();

      await waitFor('the engine back on the new master', () => engine.isAvailable(), 20_000);
      let page: Awaited<ReturnType<Engine['history']['read']>> | undefined;
      while (!page) {
        page = await engine.history.read(topic, { since: last.offset, limit: 100 }).catch(() => undefined);
      }
      expect(page.epoch).not.toBe(last.epoch);
      const after: string[] = [];
      for (let i = 1; i <= 15; i++) {
        const position = await publish(`c${i}`).catch(() => undefined);
        if (!position) continue;
        expect(position.epoch).not.toBe(last.epoch);
        record(`c${i}`, position);
        after.push(`c${i}`);
      }
      expect(after.length).toBeGreaterThan(0);
      // The shard channel was subscribed again on the new master: what was published arrives.
      await waitFor(
        'the publications after the failover delivered',
        () => after.every((body) => received.some((p) => p.body === body)),
        10_000,
      );
    } finally {
      master.disconnect();
      replica.disconnect();
    }
  }, 90_000);
});
