import { createMemoryEngine, createMemoryState } from '../src/engine';
import { isValidEpoch, newEpoch } from '../src/history/epochs';
import type { Engine, MemoryState } from '../src/engine';
import { describeHistoryContract } from './contracts/history.contract';
import type { HistoryEngine } from './contracts/history.contract';

describeHistoryContract('memory', async () => {
  let now = Date.now();
  const clock = () => now;
  let state: MemoryState = createMemoryState({ now: clock });
  let engines: Engine[] = [];
  const start = (count: number): HistoryEngine => {
    engines = Array.from({ length: count }, () => createMemoryEngine(state));
    return { brokers: engines.map((e) => e.broker), history: state.history };
  };
  return {
    start: async (count) => start(count),
    advance: (ms) => {
      now += ms;
    },
    loseHistory: async (old) => {
      await Promise.all(engines.map((e) => e.close()));
      state = createMemoryState({ now: clock });
      return start(old.brokers.length);
    },
    holds: async (topic) => state.history.holds(topic),
    footprint: async () => state.history.streamCount,
    close: async () => void (await Promise.all(engines.map((e) => e.close()))),
  };
});

describe('memory history', () => {
  it('frees the streams of idle topics once they expired, without any access to them', async () => {
    let now = 0;
    const state = createMemoryState({ now: () => now });
    const engine = createMemoryEngine(state);
    const retention = { size: 10, ttlSeconds: 1 };
    for (let i = 0; i < 50; i++) {
      await engine.broker.publish(
        { topic: { key: 'k', protocol: 'v4', channel: `c${i}` }, body: 'x', origin: 'n' },
        retention,
      );
    }
    expect(state.history.streamCount).toBe(50);
    now += 60_000;
    await engine.broker.publish(
      { topic: { key: 'k', protocol: 'v4', channel: 'busy' }, body: 'x', origin: 'n' },
      retention,
    );
    expect(state.history.streamCount).toBe(1);
    await engine.close();
  });

  it("judges an empty epoch by the query's TTL, else the configured one, and by the engine instance", async () => {
    let now = 1_000_000;
    const state = createMemoryState({ now: () => now, historyTtlSeconds: 10 });
    const topic = (channel: string) => ({ key: 'k', protocol: 'v4' as const, channel });
    const configured = await state.history.read(topic('a'), { limit: 1 });
    const asked = await state.history.read(topic('b'), { limit: 1, ttlSeconds: 60 });
    expect(state.history.streamCount).toBe(0);
    now += 10_000;
    expect((await state.history.read(topic('a'), { limit: 1, at: configured.epoch })).epoch).not.toBe(
      configured.epoch,
    );
    expect((await state.history.read(topic('b'), { limit: 1, ttlSeconds: 60, at: asked.epoch })).epoch).toBe(
      asked.epoch,
    );
    // Another engine instance (a restart) never vouches for this one's empty epochs.
    const restarted = createMemoryState({ now: () => now, historyTtlSeconds: 10 });
    expect(
      (await restarted.history.read(topic('b'), { limit: 1, ttlSeconds: 60, at: asked.epoch })).epoch,
    ).not.toBe(asked.epoch);
  });

  it('starts a new epoch for every new state (an engine restart)', async () => {
    const topic = { key: 'k', protocol: 'v4' as const, channel: 'c' };
    const epochs = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const engine = createMemoryEngine(createMemoryState());
      const position = await engine.broker.publish(
        { topic, body: 'x', origin: 'n' },
        { size: 1, ttlSeconds: 60 },
      );
      epochs.add(position?.epoch as string);
      await engine.close();
    }
    expect(epochs.size).toBe(20);
  });
});

describe('epochs', () => {
  it('are unique short tokens that isValidEpoch accepts, and it refuses anything else', () => {
    const drawn = Array.from({ length: 1000 }, newEpoch);
    expect(new Set(drawn).size).toBe(1000);
    expect(drawn.every(isValidEpoch)).toBe(true);
    expect(drawn.every((e) => e.length <= 19)).toBe(true);
    for (const bad of ['', 'a'.repeat(33), 'a b', 'a|b', 'ä', 7, null, undefined, ['x']]) {
      expect(isValidEpoch(bad)).toBe(false);
    }
    expect(isValidEpoch('A-z_09')).toBe(true);
  });
});
