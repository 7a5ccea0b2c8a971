import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config/load';
import type { Engine } from '../src/engine';
import { EngineUnavailableError } from '../src/errors';
import { createLogger } from '../src/logger';
import type { ControlCommand, Publication } from '../src/broker/broker';
import { createRedisEngine } from '../src/redis/redis-engine';
import type { Topic } from '../src/types';
import { startRedis, startRedisCluster, waitFor } from '@switchboard/harness';
import type { RedisClusterHandle, RedisServer } from '@switchboard/harness';
import { unique } from './support/wait';

/** Outages against a standalone redis-server this file kills and restarts on the same port. */
describe('Redis engine through an outage', () => {
  let server: RedisServer;
  let prefix: string;
  const engines: Engine[] = [];
  const lines: Array<{ level: number; msg: string }> = [];

  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });

  const engine = async (nodeId: string): Promise<Engine> => {
    const config = loadConfig({ REDIS_URL: server.url, REDIS_PREFIX: prefix, NODE_ID: nodeId });
    const created = await createRedisEngine(config, createLogger({ level: 'info', nodeId }, sink));
    engines.push(created);
    return created;
  };

  beforeAll(async () => {
    server = await startRedis();
  });

  beforeEach(() => {
    prefix = unique('sbo');
    lines.length = 0;
  });

  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });

  afterAll(async () => {
    await server.stop();
  });

  it('fails calls fast while Redis is down and recovers availability and subscriptions on its own', async () => {
    const a = await engine('node-a');
    const b = await engine('node-b');
    const room: Topic = { key: unique('key'), protocol: 'v4', channel: 'room' };
    const later: Topic = { ...room, channel: 'later' };
    const received: Publication[] = [];
    b.broker.setHandlers({ message: (p) => received.push(p), control: () => undefined });
    a.broker.setHandlers({ message: () => undefined, control: () => undefined });
    const gone: Topic = { ...room, channel: 'gone' };
    await b.broker.subscribe(room);
    await b.broker.subscribe(gone);
    const changes: boolean[] = [];
    b.onAvailability((available) => changes.push(available));
    expect(b.isAvailable()).toBe(true);

    await server.kill();
    await waitFor('availability false', () => !b.isAvailable() && !a.isAvailable(), 2000);
    expect(changes).toEqual([false]);

    const calls: Array<() => Promise<unknown>> = [
      () => a.broker.publish({ topic: room, body: 'lost', origin: 'node-a' }),
      () => a.broker.publishControl({ type: 'key-changed', key: room.key }),
      () => a.presence.join(room, { connId: 'node-a/1', nodeId: 'node-a', member: { uuid: 'u1' } }, 1),
      () => a.presence.identities(room, 0, 10),
      () => a.counts.increment('node-a', room.key, 'room'),
      () => a.counts.sum(room.key),
      () => a.logs.recent(room.key),
      () => a.keys.get(room.key),
      () => a.nodes.heartbeat('node-a', 1),
    ];
    for (const call of calls) {
      const started = Date.now();
      await expect(call()).rejects.toBeInstanceOf(EngineUnavailableError);
      expect(Date.now() - started).toBeLessThan(100);
    }
    // A subscription made during the outage is remembered and restored with the others; an
    // unsubscribe resolves at once and is not undone by the restoration.
    await b.broker.subscribe(later).catch(() => undefined);
    const unsubscribing = Date.now();
    await b.broker.unsubscribe(gone);
    expect(Date.now() - unsubscribing).toBeLessThan(100);

    await server.restart();
    await waitFor('availability true', () => b.isAvailable() && a.isAvailable(), 5000);
    expect(changes).toEqual([false, true]);

    // The subscriber connection may come back a moment after the command connection.
    await waitFor(
      'delivery after the restart',
      () => {
        if (received.some((p) => p.topic.channel === 'later')) return true;
        void a.broker.publish({ topic: later, body: 'probe', origin: 'node-a' }).catch(() => undefined);
        return false;
      },
      5000,
    );
    await a.broker.publish({ topic: gone, body: 'unsubscribed', origin: 'node-a' });
    await a.broker.publish({ topic: room, body: 'back', origin: 'node-a' });
    await waitFor('delivery on the old subscription', () => received.some((p) => p.body === 'back'), 2000);
    // One server, one subscriber connection: 'unsubscribed' would have arrived before 'back'.
    expect(received.some((p) => p.body === 'lost' || p.body === 'unsubscribed')).toBe(false);

    const said = (msg: string): number => lines.filter((l) => l.msg === msg && l.msg).length;
    expect(said('Redis lost')).toBe(2);
    expect(said('Redis back')).toBe(2);
    expect(lines.find((l) => l.msg === 'Redis lost')?.level).toBe(40);
    expect(lines.find((l) => l.msg === 'Redis back')?.level).toBe(30);
  });

  it('starts new epochs from offset 1 once a Redis restart lost the history, and keeps fanning out', async () => {
    const config = loadConfig({
      REDIS_URL: server.url,
      REDIS_PREFIX: prefix,
      NODE_ID: 'node-h',
      HISTORY_TTL_SECONDS: '9',
    });
    const h = await createRedisEngine(config, createLogger({ level: 'silent' }));
    engines.push(h);
    const received: Publication[] = [];
    h.broker.setHandlers({ message: (p) => received.push(p), control: () => undefined });
    const room: Topic = { key: unique('key'), protocol: 'v4', channel: 'room' };
    await h.broker.subscribe(room);
    // A read of a topic without a stream stores nothing: its position is an empty epoch.
    const before = await h.history.read(room, { limit: 10 });
    expect(before).toEqual({ offset: 0, epoch: expect.stringMatching(/^_e/), publications: [] });
    const raw = new Redis(server.url);
    const stored = await raw.keys(`${prefix}:history:*`).finally(() => raw.disconnect());
    expect(stored).toEqual([]);
    const first = await h.broker.publish({ topic: room, body: 'a', origin: 'node-h' }, config.history);
    expect(first).toEqual({ offset: 1, epoch: expect.any(String) });
    expect((await h.history.read(room, { since: 0, limit: 10, at: before.epoch })).follows).toBe(
      before.epoch,
    );
    expect(config.history).toEqual({ size: 100, ttlSeconds: 9, maxBytes: 1024 * 1024 });

    await server.restart();
    await waitFor('availability true', () => h.isAvailable(), 5000);
    const after = await h.history.read(room, { since: 1, limit: 10 });
    expect(after.offset).toBe(0);
    expect([before.epoch, first?.epoch]).not.toContain(after.epoch);
    // An empty epoch of the master's previous generation is never vouched for.
    expect((await h.history.read(room, { since: 0, limit: 10, at: before.epoch })).epoch).not.toBe(
      before.epoch,
    );
    await waitFor(
      'a publication of the new epoch delivered',
      () => {
        if (received.some((p) => p.body === 'b')) return true;
        void h.broker
          .publish({ topic: room, body: 'b', origin: 'node-h' }, config.history)
          .catch(() => undefined);
        return false;
      },
      5000,
    );
    const fresh = received.filter((p) => p.body === 'b');
    expect(fresh[0]).toMatchObject({ offset: 1 });
    expect([before.epoch, first?.epoch, after.epoch]).not.toContain(fresh[0]?.epoch);
    expect(fresh.map((p) => p.offset)).toEqual(fresh.map((_, i) => i + 1));
    expect((await h.history.read(room, { since: 0, limit: 10, at: before.epoch })).follows).toBeUndefined();
    expect((await h.history.read(room, { since: 0, limit: 10, at: after.epoch })).follows).toBe(after.epoch);
  });

  it('starts unavailable when Redis is down, and becomes available when it comes up', async () => {
    await server.kill();
    const c = await engine('node-c');
    expect(c.isAvailable()).toBe(false);
    await expect(c.nodes.heartbeat('node-c', 1)).rejects.toBeInstanceOf(EngineUnavailableError);
    await server.restart();
    await waitFor('availability', () => c.isAvailable(), 5000);
    await c.nodes.heartbeat('node-c', 1);
    expect(lines.filter((l) => l.msg === 'Redis back')).toHaveLength(1);
  }, 20_000);
});

/** The same outage on a 3-master cluster: every master killed at once, then restarted. */
describe('Redis Cluster engine through an outage', () => {
  let cluster: RedisClusterHandle;
  const engines: Engine[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 30_000);

  afterAll(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    await cluster.stop();
  });

  it('fails fast while the cluster is down and restores availability and sharded subscriptions', async () => {
    const prefix = unique('sbc');
    const engine = async (nodeId: string): Promise<Engine> => {
      const config = loadConfig({
        REDIS_CLUSTER_NODES: cluster.nodesEnv,
        REDIS_PREFIX: prefix,
        NODE_ID: nodeId,
      });
      const created = await createRedisEngine(config, createLogger({ level: 'silent' }));
      engines.push(created);
      return created;
    };
    const a = await engine('node-a');
    const b = await engine('node-b');
    const received: string[] = [];
    const controls: ControlCommand[] = [];
    b.broker.setHandlers({ message: (p) => received.push(p.body), control: (c) => controls.push(c) });
    a.broker.setHandlers({ message: () => undefined, control: () => undefined });
    const rooms: Topic[] = Array.from({ length: 6 }, (_, i) => ({
      key: unique('key'),
      protocol: 'v4',
      channel: `room-${i}`,
    }));
    for (const room of rooms) await b.broker.subscribe(room);
    for (const room of rooms)
      await a.broker.publish({ topic: room, body: `before ${room.channel}`, origin: 'node-a' });
    await waitFor('delivery before the outage', () => received.length === rooms.length);

    await cluster.kill();
    await waitFor('availability false', () => !a.isAvailable() && !b.isAvailable(), 5000);
    const started = Date.now();
    await expect(
      a.broker.publish({ topic: rooms[0] as Topic, body: 'lost', origin: 'node-a' }),
    ).rejects.toBeInstanceOf(EngineUnavailableError);
    await expect(a.counts.sum('k')).rejects.toBeInstanceOf(EngineUnavailableError);
    expect(Date.now() - started).toBeLessThan(100);

    await cluster.restart();
    await waitFor('availability true', () => a.isAvailable() && b.isAvailable(), 10_000);
    received.length = 0;
    await waitFor(
      'delivery on every old subscription',
      () => {
        for (const room of rooms) {
          if (!received.includes(`after ${room.channel}`)) {
            void a.broker
              .publish({ topic: room, body: `after ${room.channel}`, origin: 'node-a' })
              .catch(() => undefined);
          }
        }
        return rooms.every((room) => received.includes(`after ${room.channel}`));
      },
      10_000,
    );
    await waitFor(
      'control delivery',
      () => {
        if (controls.length === 0)
          void a.broker.publishControl({ type: 'node-dead', nodeId: 'x' }).catch(() => undefined);
        return controls.length > 0;
      },
      10_000,
    );
  }, 40_000);
});
