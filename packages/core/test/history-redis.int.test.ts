import { Cluster } from 'ioredis';
import { RedisBroker } from '../src/broker/broker-redis';
import { serverGeneration } from '../src/redis/clients';
import type { RedisClients } from '../src/redis/clients';
import { RedisHistory } from '../src/history/history-redis';
import { onHistoryTrimmed } from '../src/redis/history-scripts';
import { describeHistoryContract } from './contracts/history.contract';
import type { HistoryEngine } from './contracts/history.contract';
import { describeEachRedis } from './support/redis-targets';
import type { RedisBackend } from './support/redis-targets';
import { unique } from './support/wait';
import { waitFor } from '@switchboard/harness';
import type { Publication } from '../src/broker/broker';
import type { Topic } from '../src/types';
import { EngineUnavailableError } from '../src/errors';

describeEachRedis((backend) => {
  describeHistoryContract('redis', async () => {
    const keys = backend().freshKeys();
    const opened: RedisClients[] = [];
    const brokers: RedisBroker[] = [];
    return {
      start: async (count): Promise<HistoryEngine> => {
        for (let i = 0; i < count; i++) {
          const clients = await backend().clients();
          opened.push(clients);
          const broker = new RedisBroker(clients, keys);
          await broker.ready();
          brokers.push(broker);
        }
        const first = opened[0] as RedisClients;
        return { brokers: [...brokers], history: new RedisHistory(first.command, keys) };
      },
      advance: () => undefined,
      loseHistory: async (engine) => {
        const { command } = opened[0] as RedisClients;
        const servers = command instanceof Cluster ? command.nodes('master') : [command];
        await Promise.all(servers.map((server) => server.flushall()));
        return engine;
      },
      holds: async (topic) => {
        const { command } = opened[0] as RedisClients;
        const list = keys.historyStream(topic);
        return (await command.exists(keys.historyMeta(topic, serverGeneration(command, list)), list)) > 0;
      },
      footprint: async () => {
        // This target's keys (its own prefix): DBSIZE, but blind to other tests' keys expiring.
        const { command } = opened[0] as RedisClients;
        const servers = command instanceof Cluster ? command.nodes('master') : [command];
        let total = 0;
        for (const server of servers) {
          let cursor = '0';
          do {
            const [next, found] = await server.scan(cursor, 'MATCH', `${keys.prefix}:*`, 'COUNT', 1000);
            cursor = next;
            total += found.length;
          } while (cursor !== '0');
        }
        return total;
      },
      close: async () => {
        await Promise.all(brokers.map((b) => b.close()));
        await Promise.all(opened.map((c) => c.close()));
      },
    };
  });

  describeRedisStreams(backend);
});

/** What only Redis has: keys with TTLs, keys lost one at a time, the wire on the channel. */
function describeRedisStreams(backend: () => RedisBackend): void {
  describe('Redis topic streams', () => {
    let clients: RedisClients;
    let keys: ReturnType<RedisBackend['freshKeys']>;
    let broker: RedisBroker;
    let history: RedisHistory;
    let topic: Topic;
    const received: Publication[] = [];

    beforeEach(async () => {
      clients = await backend().clients();
      keys = backend().freshKeys();
      broker = new RedisBroker(clients, keys);
      broker.setHandlers({ message: (p) => received.push(p), control: () => undefined });
      await broker.ready();
      history = new RedisHistory(clients.command, keys, 7);
      topic = { key: unique('key'), protocol: 'v3', channel: 'room' };
      received.length = 0;
    });

    afterEach(async () => {
      await broker.close();
      await clients.close();
    });

    const pttl = (key: string) => clients.command.pttl(key);
    /** The meta key the scripts use now, under the server's generation. */
    const metaKey = (t: Topic) =>
      keys.historyMeta(t, serverGeneration(clients.command, keys.historyStream(t)));
    const publish = (body: string, size = 5, ttlSeconds = 30) =>
      broker.publish(
        { topic, body, origin: 'n1', acceptedAt: 1_700_000_000_000, source: 'api' },
        { size, ttlSeconds },
      );

    it("keeps both history keys under the publication's TTL, renewed by each publication", async () => {
      await publish('a', 5, 30);
      for (const key of [metaKey(topic), keys.historyStream(topic)]) {
        expect(await pttl(key)).toBeGreaterThan(25_000);
        expect(await pttl(key)).toBeLessThanOrEqual(30_000);
      }
      await publish('b', 5, 300);
      expect(await pttl(metaKey(topic))).toBeGreaterThan(290_000);
      expect(await pttl(keys.historyStream(topic))).toBeGreaterThan(290_000);
    });

    it('writes nothing on a read, extends no stream, and stores when a stream started', async () => {
      await history.read(topic, { limit: 10 });
      await history.read(topic, { since: 0, limit: 10, ttlSeconds: 600 });
      expect(await clients.command.exists(metaKey(topic), keys.historyStream(topic))).toBe(0);
      const { command } = clients;
      const clock = async () => {
        const [seconds, micros] = await (command instanceof Cluster
          ? command.nodes('master')[0]!.time()
          : command.time());
        return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      };
      const before = await clock();
      await publish('a', 5, 30);
      const created = Number(await command.hget(metaKey(topic), 'c'));
      // The topic's master's clock; on a cluster the first master's, compared loosely.
      expect(Math.abs(created - before)).toBeLessThan(command instanceof Cluster ? 5_000 : 1_000);
      await publish('b', 5, 30);
      expect(Number(await command.hget(metaKey(topic), 'c'))).toBe(created);
      // A read does not extend a stream's life: that is the publications' job.
      await history.read(topic, { limit: 10, ttlSeconds: 600 });
      expect(await pttl(metaKey(topic))).toBeLessThanOrEqual(30_000);
    });

    it('never vouches for an empty epoch after an eviction: a stream may have been dropped early', async () => {
      const { command } = clients;
      const servers = command instanceof Cluster ? command.nodes('master') : [command];
      const read = await history.read(topic, { limit: 0 });
      expect((await history.read(topic, { limit: 0, at: read.epoch })).epoch).toBe(read.epoch);
      // One eviction on the topic's master (any key), forced with a tiny maxmemory.
      const evictions = async () =>
        Number(/evicted_keys:(\d+)/.exec(await servers[0]!.info('stats'))?.[1] ?? 0);
      const master = command instanceof Cluster ? undefined : command;
      if (!master) return; // the cluster variant cannot aim at the topic's master here
      const start = await evictions();
      const [policy, limit] = [
        ((await master.config('GET', 'maxmemory-policy')) as string[])[1]!,
        ((await master.config('GET', 'maxmemory')) as string[])[1]!,
      ];
      try {
        await master.config('SET', 'maxmemory-policy', 'allkeys-random');
        await master.set(`${keys.prefix}:filler`, 'x'.repeat(1 << 20));
        await master.config('SET', 'maxmemory', '1');
        await waitFor('an eviction', async () => {
          await master.set(`${keys.prefix}:probe`, 'x').catch(() => undefined);
          return (await evictions()) > start;
        });
      } finally {
        await master.config('SET', 'maxmemory', limit);
        await master.config('SET', 'maxmemory-policy', policy);
      }
      expect((await history.read(topic, { limit: 0, at: read.epoch })).epoch).not.toBe(read.epoch);
    });

    it('counts the bytes it holds, reports what the byte cap drops, and counts an older list once', async () => {
      const trimmed: number[] = [];
      onHistoryTrimmed(clients.command, (bytes) => trimmed.push(bytes));
      const capped = (body: string) =>
        broker.publish({ topic, body, origin: 'n1' }, { size: 10, ttlSeconds: 30, maxBytes: 250 });
      await capped('a'.repeat(100));
      await capped('b'.repeat(100));
      const wires = await clients.command.lrange(keys.historyStream(topic), 0, -1);
      const bytes = (list: string[]) => list.reduce((sum, w) => sum + Buffer.byteLength(w), 0);
      expect(Number(await clients.command.hget(metaKey(topic), 'b'))).toBe(bytes(wires));
      expect(trimmed).toEqual([]);
      await capped('c'.repeat(100));
      expect(trimmed).toEqual([Buffer.byteLength(wires[0] as string)]);
      const kept = await clients.command.lrange(keys.historyStream(topic), 0, -1);
      expect(kept).toHaveLength(2);
      expect(Number(await clients.command.hget(metaKey(topic), 'b'))).toBe(bytes(kept));
      // A list stored by a version that did not count bytes: counted in full at the next publish.
      await clients.command.hdel(metaKey(topic), 'b');
      await capped('d'.repeat(10));
      const now = await clients.command.lrange(keys.historyStream(topic), 0, -1);
      expect(Number(await clients.command.hget(metaKey(topic), 'b'))).toBe(bytes(now));
    });

    it('starts a new epoch and never serves the old entries when the meta alone is lost', async () => {
      const first = await publish('a');
      await publish('b');
      await clients.command.del(metaKey(topic));
      const next = await publish('c');
      expect(next).toEqual({ offset: 1, epoch: expect.any(String) });
      expect(next?.epoch).not.toBe(first?.epoch);
      const page = await history.read(topic, { since: 0, limit: 10 });
      expect(page.publications.map((p) => [p.body, p.offset, p.epoch])).toEqual([['c', 1, next?.epoch]]);
    });

    it('serves what is left when the list alone is lost: a range that starts late', async () => {
      await publish('a');
      await clients.command.del(keys.historyStream(topic));
      await publish('b');
      const page = await history.read(topic, { since: 0, limit: 10 });
      expect(page.offset).toBe(2);
      expect(page.publications.map((p) => p.offset)).toEqual([2]);
    });

    it('sends the stored wire form on the channel, fields intact, position inside', async () => {
      await broker.subscribe(topic);
      const position = await broker.publish(
        {
          topic,
          body: '{"a":"b|c"}',
          origin: 'n1',
          stampable: true,
          to: 'u|1',
          source: 'client',
          acceptedAt: 5,
        },
        { size: 5, ttlSeconds: 30 },
      );
      await waitFor('the publication', () => received.length === 1);
      const expected = {
        topic,
        body: '{"a":"b|c"}',
        origin: 'n1',
        stampable: true,
        to: 'u|1',
        source: 'client',
        acceptedAt: 5,
        ...position,
      };
      expect(received).toEqual([expected]);
      expect((await history.read(topic, { limit: 1 })).publications).toEqual([expected]);
      const [stored] = await clients.command.lrange(keys.historyStream(topic), 0, -1);
      expect(stored).toBe(`smotC|n1|5|1|${position?.epoch}|3|u|1{"a":"b|c"}`);
    });
  });
}

describeEachRedis((backend) => {
  // On a standalone server the publish script is loaded once per connection and run by its SHA1:
  // a script cache flushed under a live connection must cost one failed publish (nobody received
  // it, no offset taken), never a publication out of its order or lost silently.
  it('publishes in order after the script cache was flushed under the connection', async () => {
    const clients = await backend().clients();
    const keys = backend().freshKeys();
    const broker = new RedisBroker(clients, keys);
    await broker.ready();
    const received: string[] = [];
    broker.setHandlers({ message: (p) => received.push(`${p.offset}:${p.body}`), control: () => undefined });
    const topic = { key: 'k', protocol: 'v3' as const, channel: 'flushed' };
    await broker.subscribe(topic);
    const retention = { size: 10, ttlSeconds: 60 };
    const publish = (body: string) => broker.publish({ topic, body, origin: 'n1' }, retention);
    expect(await publish('a')).toMatchObject({ offset: 1 });
    const { command } = clients;
    const servers = command instanceof Cluster ? command.nodes('master') : [command];
    await Promise.all(servers.map((server) => server.script('FLUSH')));
    const second = await publish('b').then(
      (position) => position,
      (error: unknown) => error,
    );
    if (second instanceof Error) expect(second).toBeInstanceOf(EngineUnavailableError);
    expect(await publish('c')).toMatchObject({ offset: second instanceof Error ? 2 : 3 });
    const expected = second instanceof Error ? ['1:a', '2:c'] : ['1:a', '2:b', '3:c'];
    await waitFor('the publications', () => received.length >= expected.length);
    expect(received).toEqual(expected);
    await broker.close();
  });
});
