import type { Redis } from 'ioredis';
import { EngineUnavailableError } from '../src/errors';
import { RedisBroker } from '../src/broker/broker-redis';
import { createRedisClients } from '../src/redis/clients';
import type { RedisClients } from '../src/redis/clients';
import { redisKeys } from '../src/redis/keys';
import { RedisMessageLog } from '../src/logs/message-log-redis';
import { MAX_BATCH_PUBLICATIONS } from '../src/redis/stream-publishes';
import type { Topic } from '../src/types';
import { startRedis, waitFor } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { silentLogger } from './support/redis-targets';
import { apiLogRecord } from './support/log-records';
import { unique } from './support/wait';

/**
 * A standalone server's stream publications go out at once while the connection is quiet, and
 * the rest of a turn's as one script call (stream-publishes.ts). The contract suites check what
 * callers see; this checks the batching itself, the log records riding in it, and a batch that
 * fails.
 */
describe('stream publications batched per turn (standalone)', () => {
  let server: RedisServer;
  let clients: RedisClients;
  let broker: RedisBroker;
  let log: RedisMessageLog;
  let keys: ReturnType<typeof redisKeys>;
  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  beforeEach(async () => {
    clients = createRedisClients({ kind: 'standalone', url: server.url }, silentLogger);
    await clients.up();
    keys = redisKeys(unique('sbt'));
    broker = new RedisBroker(clients, keys);
    await broker.ready();
    log = new RedisMessageLog(clients.command, keys, 500);
  });
  afterEach(async () => {
    await broker.close();
    await clients.close();
  });
  afterAll(async () => {
    await server.stop();
  });

  const retention = { size: 100, ttlSeconds: 60 };
  const publishLogged = (topic: Topic, body: string) =>
    broker.publish(
      { topic, body, origin: 'n1', source: 'api' },
      retention,
      log.ridingAppend(topic.key, apiLogRecord(body)),
    );
  const scriptCalls = async (): Promise<number> => {
    const stats = await (clients.command as Redis).info('commandstats');
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return calls('evalsha') + calls('eval');
  };

  it('sends the first publication of a quiet turn at once and the rest of the turn as one script call; each caller gets its position, and the log records are in', async () => {
    const a: Topic = { key: unique('ka'), protocol: 'v3', channel: 'room' };
    const b: Topic = { key: unique('kb'), protocol: 'v4', channel: 'room' };
    await publishLogged(a, 'warm-up');
    const before = await scriptCalls();
    const sent = Array.from({ length: 40 }, (_, i) => ({ topic: i % 4 === 3 ? b : a, body: `m${i}` }));
    const returned = await Promise.all(sent.map(({ topic, body }) => publishLogged(topic, body)));
    // The first alone, the 39 others together. The INFO call itself is not a script call.
    expect((await scriptCalls()) - before).toBe(2);
    const ofA = sent.filter((p) => p.topic === a).map((p) => p.body);
    const ofB = sent.filter((p) => p.topic === b).map((p) => p.body);
    expect(returned.filter((_, i) => sent[i]?.topic === a).map((p) => p?.offset)).toEqual(
      ofA.map((_, i) => i + 2),
    );
    expect(returned.filter((_, i) => sent[i]?.topic === b).map((p) => p?.offset)).toEqual(
      ofB.map((_, i) => i + 1),
    );
    expect((await log.recent(a.key)).map((r) => r.message)).toEqual([...ofA].reverse().concat('warm-up'));
    expect((await log.recent(b.key)).map((r) => r.message)).toEqual([...ofB].reverse());
  });

  it(`splits a turn into batches of at most ${MAX_BATCH_PUBLICATIONS}, in order`, async () => {
    const topic: Topic = { key: unique('k'), protocol: 'v3', channel: 'many' };
    await broker.subscribe(topic);
    const received: number[] = [];
    broker.setHandlers({ message: (p) => received.push(p.offset ?? -1), control: () => undefined });
    const before = await scriptCalls();
    const count = MAX_BATCH_PUBLICATIONS * 2 + 1;
    const returned = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        broker.publish({ topic, body: `m${i}`, origin: 'n1' }, retention),
      ),
    );
    expect((await scriptCalls()) - before).toBe(3);
    const expected = Array.from({ length: count }, (_, i) => i + 1);
    expect(returned.map((p) => p?.offset)).toEqual(expected);
    await waitFor('every publication', () => received.length === count);
    expect(received).toEqual(expected);
  });

  it('fails every caller of a batch that fails, and none of its publications is made', async () => {
    const topic: Topic = { key: unique('k'), protocol: 'v3', channel: 'failing' };
    expect(await publishLogged(topic, 'a')).toMatchObject({ offset: 1 });
    // 'b' alone, 'c' and 'd' as a batch: both scripts are loaded on the connection.
    const before = await scriptCalls();
    await Promise.all(['b', 'c', 'd'].map((body) => publishLogged(topic, body)));
    expect((await scriptCalls()) - before).toBe(2);
    // The script cache flushed under the connection: 'e' alone and the batch of 'f' and 'g'
    // meet NOSCRIPT.
    await clients.command.script('FLUSH');
    const failed = await Promise.allSettled(['e', 'f', 'g'].map((body) => publishLogged(topic, body)));
    for (const result of failed) {
      expect(result).toMatchObject({ status: 'rejected', reason: expect.any(EngineUnavailableError) });
    }
    // The next calls load the scripts again and continue the stream where it was.
    const next = await Promise.all(['h', 'i', 'j'].map((body) => publishLogged(topic, body)));
    expect(next.map((p) => p?.offset)).toEqual([5, 6, 7]);
    expect((await log.recent(topic.key)).map((r) => r.message)).toEqual(['j', 'i', 'h', 'd', 'c', 'b', 'a']);
  });

  it('fails every caller of a batch in flight when Redis goes away', async () => {
    const topic: Topic = { key: unique('k'), protocol: 'v3', channel: 'outage' };
    await publishLogged(topic, 'a');
    // Held by the server until it dies: the batch is on its way, unanswered.
    const pauser = createRedisClients({ kind: 'standalone', url: server.url }, silentLogger);
    await pauser.up();
    await pauser.command.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    await pauser.close();
    const settled = Promise.allSettled(['b', 'c', 'd'].map((body) => publishLogged(topic, body)));
    await new Promise((resolve) => setImmediate(resolve));
    await server.kill();
    const results = await settled;
    for (const result of results) {
      expect(result).toMatchObject({ status: 'rejected', reason: expect.any(EngineUnavailableError) });
    }
    await server.restart();
    await clients.up();
  });
});
