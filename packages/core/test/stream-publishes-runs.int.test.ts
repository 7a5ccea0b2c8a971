import { Redis } from 'ioredis';
import { RedisBroker } from '../src/broker/broker-redis';
import { createRedisClients, serverGeneration } from '../src/redis/clients';
import type { RedisClients } from '../src/redis/clients';
import * as scripts from '../src/redis/history-scripts';
import { redisKeys } from '../src/redis/keys';
import type { RedisKeys } from '../src/redis/keys';
import { RedisMessageLog } from '../src/logs/message-log-redis';
import type { HistoryRetention } from '../src/history/history';
import type { Topic } from '../src/types';
import { newEpoch } from '../src/history/epochs';
import { startRedis, waitFor } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { silentLogger } from './support/redis-targets';
import { apiLogRecord } from './support/log-records';
import { unique } from './support/wait';

/**
 * A batch call pays a run of consecutive publications of one topic once (history-scripts.ts,
 * `STORE_RUN_LIB`). Whatever the runs, it must leave Redis exactly as the single-publication
 * script called once per publication in the same order: the same offsets, LISTs, `b`, message
 * logs, published wires, and bytes reported for the byte cap, publication by publication. Each
 * case runs the same publications in two worlds on one server, under two prefixes: batched (one
 * batch call) and one by one (each awaited, so each goes alone), and compares them with the
 * epochs (drawn afresh in each world) replaced by the topic's name; then checks a few figures by
 * hand.
 */
describe('runs of one topic in a batch call (standalone)', () => {
  let server: RedisServer;
  let watcher: Redis;
  /** Every wire published on a watched fan-out channel, per channel, in order. */
  const heard = new Map<string, string[]>();
  beforeAll(async () => {
    // The wires' lengths, hence `b` and the cuts, must not differ between the two worlds by their
    // epochs': every epoch drawn here has a counter of two base36 digits (36 to 1295).
    while (newEpoch().length < 10);
    server = await startRedis();
    watcher = new Redis(server.url);
    watcher.on('message', (channel: string, wire: string) => {
      heard.set(channel, [...(heard.get(channel) ?? []), wire]);
    });
  }, 30_000);
  afterAll(async () => {
    watcher.disconnect();
    await server.stop();
  });

  /** The raw replies of the publish scripts, in call order, while a world records them. */
  let replies: string[] | undefined;
  beforeEach(() => {
    for (const name of ['runHistoryPublish', 'runHistoryPublishBatch'] as const) {
      const original = scripts[name] as (...args: unknown[]) => Promise<unknown>;
      jest.spyOn(scripts, name).mockImplementation(async (...args: unknown[]) => {
        const reply = await original(...args);
        replies?.push(...(Array.isArray(reply) ? (reply as string[]) : [reply as string]));
        return reply;
      });
    }
  });
  afterEach(() => jest.restoreAllMocks());

  interface Step {
    readonly topic: Topic;
    readonly body: string;
    /** Default: size 100, TTL 60 s, no byte cap. */
    readonly retention?: HistoryRetention;
    /** Whether its record rides in the key's message log (default: yes). */
    readonly logged?: boolean;
  }

  interface World {
    readonly keys: RedisKeys;
    readonly clients: RedisClients;
    readonly broker: RedisBroker;
    readonly log: RedisMessageLog;
    /** The bytes each reply reported for the byte cap. */
    readonly trimmed: number[];
  }

  const openWorld = async (): Promise<World> => {
    const clients = createRedisClients({ kind: 'standalone', url: server.url }, silentLogger);
    await clients.up();
    const keys = redisKeys(unique('sbr'));
    const broker = new RedisBroker(clients, keys);
    await broker.ready();
    const trimmed: number[] = [];
    scripts.onHistoryTrimmed(clients.command, (bytes) => trimmed.push(bytes));
    return { keys, clients, broker, log: new RedisMessageLog(clients.command, keys, 500), trimmed };
  };
  const closeWorld = async (world: World): Promise<void> => {
    await world.broker.close();
    await world.clients.close();
  };

  const publish = (world: World, step: Step) =>
    world.broker.publish(
      { topic: step.topic, body: step.body, origin: 'n1', acceptedAt: 1_700_000_000_000, source: 'api' },
      step.retention ?? { size: 100, ttlSeconds: 60 },
      step.logged === false ? undefined : world.log.ridingAppend(step.topic.key, apiLogRecord(step.body)),
    );

  /** `steps` one by one, each answered before the next is made. */
  const oneByOne = async (world: World, steps: readonly Step[]): Promise<void> => {
    for (const step of steps) await publish(world, step);
  };

  /** `steps` in one batch call: a publication to another topic first takes the quiet path alone. */
  const batched = async (world: World, steps: readonly Step[]): Promise<void> => {
    const calls = (scripts.runHistoryPublishBatch as jest.Mock).mock.calls.length;
    const aside: Topic = { key: unique('aside'), protocol: 'v3', channel: 'aside' };
    await Promise.all([
      publish(world, { topic: aside, body: 'aside', logged: false }),
      ...steps.map((s) => publish(world, s)),
    ]);
    expect((scripts.runHistoryPublishBatch as jest.Mock).mock.calls.length).toBe(calls + 1);
  };

  /** Every epoch this process draws: its prefix and a base36 counter. */
  const epochs = new RegExp(`${newEpoch().slice(0, 8).replace(/[-]/g, '\\$&')}[0-9a-z]+`, 'g');

  /**
   * What a world holds and published for `topics`, with `replied` (one reply per publication of
   * `steps`, in order), each epoch replaced by its topic's name and the order it appeared in.
   */
  const stateOf = async (
    world: World,
    topics: readonly Topic[],
    steps: readonly Step[],
    replied: string[],
  ) => {
    const { command } = world.clients;
    const normalizers = new Map<Topic, (text: string) => string>();
    const streams = [];
    for (const topic of topics) {
      const names = new Map<string, string>();
      const normal = (text: string) =>
        text.replace(epochs, (epoch) => {
          if (!names.has(epoch)) names.set(epoch, `<${topic.key}/${topic.channel} #${names.size}>`);
          return names.get(epoch) as string;
        });
      normalizers.set(topic, normal);
      const list = world.keys.historyStream(topic);
      const published = (heard.get(world.keys.fanout(topic)) ?? []).map(normal);
      const wires = await command.lrange(list, 0, -1);
      const meta = await command.hgetall(world.keys.historyMeta(topic, serverGeneration(command, list)));
      streams.push({
        e: meta.e && normal(meta.e),
        o: meta.o,
        b: meta.b,
        bytesHeld: wires.reduce((sum, w) => sum + Buffer.byteLength(w), 0),
        wires: wires.map(normal),
        published,
        listTtl: wires.length === 0 || (await command.ttl(list)) > 0,
        metaTtl: (await command.ttl(world.keys.historyMeta(topic, serverGeneration(command, list)))) > 0,
      });
    }
    const logs = [];
    for (const key of new Set(topics.map((t) => t.key)))
      logs.push(await command.lrange(world.keys.log(key), 0, -1));
    return {
      streams,
      logs,
      replied: replied.map((reply, i) =>
        (normalizers.get((steps[i] as Step).topic) as (t: string) => string)(reply),
      ),
      trimmed: world.trimmed,
    };
  };

  /**
   * Runs `before` one by one in both worlds, then `between`, then `steps` batched in one world
   * and one by one in the other, and expects the same; returns the batched world's state.
   */
  const compare = async (
    topics: readonly Topic[],
    steps: readonly Step[],
    before: readonly Step[] = [],
    between?: (world: World) => Promise<void>,
  ) => {
    const worlds = [await openWorld(), await openWorld()] as const;
    try {
      for (const world of worlds) await watcher.subscribe(...topics.map((t) => world.keys.fanout(t)));
      const states = [];
      for (const [index, world] of worlds.entries()) {
        const replied: string[] = [];
        replies = replied;
        await oneByOne(world, before);
        await between?.(world);
        if (index === 0) {
          await batched(world, steps);
          // The publication aside went first, alone.
          replied.splice(before.length, 1);
        } else {
          await oneByOne(world, steps);
        }
        replies = undefined;
        const expected = before.length + steps.length;
        const count = () =>
          topics.reduce((sum, t) => sum + (heard.get(world.keys.fanout(t)) ?? []).length, 0);
        await waitFor('every wire', () => count() === expected);
        states.push(await stateOf(world, topics, [...before, ...steps], replied));
      }
      const [inBatch, alone] = states as [(typeof states)[0], (typeof states)[0]];
      expect(inBatch).toEqual(alone);
      return { ...inBatch, replied: inBatch.replied.slice(before.length) };
    } finally {
      for (const world of worlds) await closeWorld(world);
    }
  };

  const topicOf = (key: string, channel = 'room'): Topic => ({ key, protocol: 'v3', channel });

  it('A A A B A A over two keys, both streams new: offsets in call order, one epoch per topic, logs in order', async () => {
    const a = topicOf(unique('ka'));
    const b = topicOf(unique('kb'));
    const steps = ['a1', 'a2', 'a3', 'b1', 'a4', 'a5'].map((body) => ({
      topic: body[0] === 'a' ? a : b,
      body,
    }));
    const state = await compare([a, b], steps);
    expect(state.replied.map((r) => r.split('|')[0])).toEqual(['1', '2', '3', '1', '4', '5']);
    const [sa, sb] = state.streams as [(typeof state.streams)[0], (typeof state.streams)[0]];
    expect(sa.o).toBe('5');
    expect(sb.o).toBe('1');
    expect(sa.wires).toEqual(sa.published);
    expect(sa.wires.map((w) => w.includes(`|<${a.key}/room #0>|`))).toEqual([true, true, true, true, true]);
    expect(Number(sa.b)).toBe(sa.bytesHeld);
    expect(Number(sb.b)).toBe(sb.bytesHeld);
    expect(state.logs.map((log) => log.map((r) => (JSON.parse(r) as { message: string }).message))).toEqual([
      ['a5', 'a4', 'a3', 'a2', 'a1'],
      ['b1'],
    ]);
  });

  it('interleaved topics, some unlogged, one continuing a stream and one whose meta was lost (a new epoch mid-batch)', async () => {
    const a = topicOf(unique('ka'));
    const b = topicOf(unique('kb'), 'other');
    const c = topicOf(unique('kc'));
    const before = [
      { topic: a, body: 'a0' },
      { topic: b, body: 'b0' },
      { topic: b, body: 'b1' },
    ];
    const steps = [
      { topic: a, body: 'a1' },
      { topic: b, body: 'b2', logged: false },
      { topic: a, body: 'a2' },
      { topic: b, body: 'b3' },
      { topic: c, body: 'c1' },
      { topic: a, body: 'a3', logged: false },
      { topic: a, body: 'a4', logged: false },
      { topic: a, body: 'a5' },
    ];
    const state = await compare([a, b, c], steps, before, async (world) => {
      const { command } = world.clients;
      const list = world.keys.historyStream(b);
      await command.del(world.keys.historyMeta(b, serverGeneration(command, list)));
    });
    expect(state.replied.map((r) => r.split('|')[0])).toEqual(['2', '1', '3', '2', '1', '4', '5', '6']);
    // b's entries of the lost epoch are gone: its LIST holds the new stream only.
    expect(state.streams[1]?.wires).toHaveLength(2);
    expect(state.logs[0]?.map((r) => (JSON.parse(r) as { message: string }).message)).toEqual([
      'a5',
      'a2',
      'a1',
      'a0',
    ]);
  });

  it('a run longer than the size, and runs over a full LIST with a byte cap: the LIST, b and each reply’s cut as one by one', async () => {
    const a = topicOf(unique('ka'));
    const b = topicOf(unique('kb'));
    const small = { size: 3, ttlSeconds: 60 };
    const capped = { size: 4, ttlSeconds: 60, maxBytes: 700 };
    const body = (label: string, length: number) => label + 'x'.repeat(length);
    const before = [
      { topic: a, body: 'a0', retention: small },
      { topic: b, body: body('b0', 150), retention: capped },
      { topic: b, body: body('b1', 150), retention: capped },
      { topic: b, body: body('b2', 20), retention: capped },
    ];
    const steps = [
      ...['a1', 'a2', 'a3', 'a4', 'a5'].map((s) => ({ topic: a, body: s, retention: small })),
      // b's LIST passes its cap within the run, and passes its size: one trim of the run drops
      // for the size what trims one by one dropped for the cap, and the cuts are reported so.
      { topic: b, body: body('b3', 150), retention: capped },
      { topic: b, body: body('b4', 150), retention: capped },
      { topic: b, body: body('b5', 10), retention: capped },
      { topic: b, body: body('b6', 400), retention: capped },
      { topic: b, body: body('b7', 10), retention: capped },
    ];
    const state = await compare([a, b], steps, before);
    const [sa, sb] = state.streams as [(typeof state.streams)[0], (typeof state.streams)[0]];
    expect(sa.wires).toEqual(sa.published.slice(-3));
    expect(Number(sa.b)).toBe(sa.bytesHeld);
    expect(Number(sb.b)).toBe(sb.bytesHeld);
    expect(sb.bytesHeld).toBeLessThanOrEqual(700);
    expect(sb.wires).toEqual(sb.published.slice(-sb.wires.length));
    expect(state.trimmed.length).toBeGreaterThan(1);
  });

  it('a run of one entry over the cap keeps it alone, and a LIST whose bytes were never counted is counted once', async () => {
    const a = topicOf(unique('ka'));
    const capped = { size: 10, ttlSeconds: 60, maxBytes: 300 };
    const before = ['a0', 'a1'].map((body) => ({ topic: a, body, retention: capped }));
    const steps = [
      { topic: a, body: 'a2', retention: capped },
      { topic: a, body: 'a3' + 'y'.repeat(600), retention: capped },
      { topic: a, body: 'a4', retention: capped },
    ];
    const state = await compare([a], steps, before, async (world) => {
      const { command } = world.clients;
      const list = world.keys.historyStream(a);
      await command.hdel(world.keys.historyMeta(a, serverGeneration(command, list)), 'b');
    });
    expect(Number(state.streams[0]?.b)).toBe(state.streams[0]?.bytesHeld);
    expect(state.streams[0]?.wires).toHaveLength(1);
  });

  it('history turned off (size 0) and on again within one batch', async () => {
    const a = topicOf(unique('ka'));
    const off = { size: 0, ttlSeconds: 60 };
    const steps = [
      { topic: a, body: 'a1' },
      { topic: a, body: 'a2', retention: off },
      { topic: a, body: 'a3', retention: off },
      { topic: a, body: 'a4' },
    ];
    const state = await compare([a], steps, [{ topic: a, body: 'a0' }]);
    expect(state.replied.map((r) => r.split('|')[0])).toEqual(['2', '3', '4', '5']);
    expect(state.streams[0]?.wires).toHaveLength(1);
    expect(Number(state.streams[0]?.b)).toBe(state.streams[0]?.bytesHeld);
  });
});
