/**
 * A topic's stream on one node puts what the broker hands over into offset order with no gap and
 * no duplicate, filling gaps from the real memory history, and says `recovered: false` when
 * history cannot fill one. The broker's at-most-once delivery is played by handing the stream a
 * chosen subset of the engine's publications, in a chosen order.
 */
import { isEmptyEpoch, MemoryHistory } from '@switchboard/core';
import type { Publication } from '@switchboard/core';
import { TopicStream } from '../src/streams/topic-stream';
import type { Joiner } from '../src/streams/topic-stream';
import type { PositionReport } from '../src/streams/topic-stream';

const topic = { key: 'k', protocol: 'v4' as const, channel: 'c' };

function setup(size = 100) {
  let now = 1_000_000;
  const history = new MemoryHistory({ now: () => now });
  const delivered: number[] = [];
  const announced: PositionReport[] = [];
  /**
   * Moves from the empty epoch of a topic without history to the first epoch it gets, at offset
   * 0 with nothing lost (the channel's first publication, docs/protocol.md "A channel without
   * history"), apart from `announced`, so the tests below speak of the channel's streams only.
   */
  const firstEpochs: PositionReport[] = [];
  let standing: string | undefined;
  let reads = 0;
  const settled: Array<() => void> = [];
  const stream = new TopicStream({
    read: async (since, at) => {
      reads++;
      // A read takes a turn of the event loop, as a Redis round trip does (a fill that never
      // settles then fails a test instead of starving its timers).
      await new Promise((resolve) => setImmediate(resolve));
      return history.read(topic, {
        ...(since === undefined ? { limit: 0 } : { since, limit: 100 }),
        ...(at === undefined ? {} : { at }),
      });
    },
    deliver: (p) => {
      delivered.push(p.offset!);
      for (const wake of settled.splice(0)) wake();
    },
    announce: (report) => {
      if (isEmptyEpoch(standing) && report.offset === 0 && report.recovered === true)
        firstEpochs.push(report);
      else announced.push(report);
      standing = report.epoch;
      for (const wake of settled.splice(0)) wake();
    },
    readFailed: () => undefined,
  });
  const publish = (n = 1): Publication[] =>
    Array.from({ length: n }, () =>
      history.append({ topic, body: 'x', origin: 'n' }, { size, ttlSeconds: 60 }),
    );
  /** Resolves at the next delivery or announcement (a fill from history is asynchronous). */
  const activity = () => new Promise<void>((resolve) => settled.push(resolve));
  /** `readAt`: when the joiner's history read was sent (default: now). */
  const joiner = (position: { epoch: string; offset: number }, readAt = performance.now()) => {
    const got: Array<number | string> = [];
    const j: Joiner = {
      position,
      readAt,
      send: (p) => got.push(p.offset!),
      lost: (r) => got.push(`lost@${r.offset}`),
      join: () => got.push('join'),
    };
    return { j, got };
  };
  return {
    history,
    stream,
    delivered,
    announced,
    firstEpochs,
    stand: (epoch: string) => (standing = epoch),
    publish,
    activity,
    joiner,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
  };
}

async function start(t: ReturnType<typeof setup>) {
  const readAt = performance.now();
  const page = await t.history.read(topic, { limit: 0 });
  const { j } = t.joiner(page, readAt);
  t.stream.handOver(j);
  t.stand(page.epoch);
  return { ...page, readAt };
}

describe('TopicStream', () => {
  it('delivers in-order publications at once and drops duplicates', async () => {
    const t = setup();
    await start(t);
    const [a, b, c] = t.publish(3);
    for (const p of [a, b, b, a, c]) t.stream.receive(p!);
    expect(t.delivered).toEqual([1, 2, 3]);
    expect(t.reads()).toBe(0);
  });

  it('fills a gap from history, in order, and keeps what arrived meanwhile', async () => {
    const t = setup();
    await start(t);
    const [p1, , , p4, p5] = t.publish(5);
    t.stream.receive(p1!);
    t.stream.receive(p4!);
    t.stream.receive(p5!);
    while (t.delivered.length < 5) await t.activity();
    expect(t.delivered).toEqual([1, 2, 3, 4, 5]);
    expect(t.announced).toEqual([]);
  });

  it('says recovered: false when history no longer holds the gap, then goes on in order', async () => {
    const t = setup(2);
    await start(t);
    const all = t.publish(5);
    t.stream.receive(all[4]!);
    while (t.delivered.length < 2) await t.activity();
    expect(t.announced).toEqual([{ epoch: all[4]!.epoch, offset: 3, recovered: false, missed: 0 }]);
    expect(t.delivered).toEqual([4, 5]);
  });

  it('a resync after a reconnect finds publications lost with no later one to reveal them', async () => {
    const t = setup();
    await start(t);
    t.publish(2);
    t.stream.resync();
    while (t.delivered.length < 2) await t.activity();
    expect(t.delivered).toEqual([1, 2]);
  });

  it('announces a new epoch: recovered when the old one was complete, not when the new one skipped', async () => {
    const t = setup();
    const first = await start(t);
    t.stream.receive(t.publish(1)[0]!);
    t.advance(61_000);
    const [fresh] = t.publish(1);
    t.stream.receive(fresh!);
    expect(fresh!.epoch).not.toBe(first.epoch);
    expect(t.announced).toEqual([{ epoch: fresh!.epoch, offset: 0, recovered: true, missed: 0 }]);
    t.advance(61_000);
    const [, second] = t.publish(2);
    t.stream.receive(second!);
    expect(t.announced[1]).toEqual({ epoch: second!.epoch, offset: 1, recovered: false, missed: 0 });
    expect(t.delivered).toEqual([1, 1, 2]);
  });

  it('after a reconnect to an engine that lost everything, says recovered: false once and takes the next epoch from there', async () => {
    const t = setup();
    await start(t);
    t.stream.receive(t.publish(1)[0]!);
    t.stream.suspend();
    t.advance(61_000); // the history expired (or Redis restarted empty), nothing published since
    t.stream.resync();
    while (t.announced.length === 0) await t.activity();
    // Let the fill run to its end: it must settle on the position every read now agrees on,
    // not announce a new epoch at each read.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    // The topic has no history now: the stream stands at an empty epoch (stored nowhere).
    expect(t.announced).toEqual([
      { epoch: expect.stringMatching(/^_e/) as unknown, offset: 0, recovered: false, missed: 0 },
    ]);
    const [next] = t.publish(1);
    t.stream.receive(next!);
    expect(t.delivered).toEqual([1, 1]);
    expect(t.announced).toHaveLength(1);
    expect(t.firstEpochs.at(-1)).toEqual({ epoch: next!.epoch, offset: 0, recovered: true, missed: 0 });
  });

  it('after a lost connection, takes nothing for complete until a resync compared with history', async () => {
    const t = setup();
    await start(t);
    t.stream.receive(t.publish(1)[0]!);
    t.stream.suspend(); // the engine connection is lost, and pub/sub with it:
    t.publish(1); // offset 2 never arrives
    t.advance(61_000);
    const [fresh] = t.publish(1); // the history expired meanwhile (or Redis restarted empty)
    t.stream.receive(fresh!); // a new epoch's first publication, after the reconnect
    expect(t.announced).toEqual([]);
    t.stream.resync();
    while (t.announced.length === 0) await t.activity();
    // Offset 2 is gone: said so, never `recovered: true` over it; then the new epoch from the
    // oldest publication its history holds.
    expect(t.announced).toEqual([{ epoch: fresh!.epoch, offset: 0, recovered: false, missed: 0 }]);
    while (t.delivered.length < 2) await t.activity();
    expect(t.delivered).toEqual([1, 1]);
    const [next] = t.publish(1);
    t.stream.receive(next!);
    while (t.delivered.length < 3) await t.activity();
    expect(t.delivered).toEqual([1, 1, 2]);
  });

  it('a subscriber that read a newer epoch than the node has seen joins it once history confirms it', async () => {
    const t = setup();
    await start(t);
    t.stream.receive(t.publish(1)[0]!);
    t.advance(61_000);
    const page = await t.history.read(topic, { limit: 0 }); // the history expired: a new epoch
    const newer = t.joiner(page);
    t.stream.handOver(newer.j);
    while (newer.got.length < 1) await new Promise((resolve) => setImmediate(resolve));
    expect(newer.got).toEqual(['join']);
    expect(t.announced).toEqual([{ epoch: page.epoch, offset: 0, recovered: false, missed: 0 }]);
  });

  it('never goes back to an epoch it left (two masters for a moment): says recovered: false once and stays', async () => {
    const t = setup();
    await start(t);
    const [a1, a2, a3] = t.publish(3); // epoch A, served by one master
    t.stream.receive(a1!);
    t.advance(61_000);
    const [b1, b2] = t.publish(2); // epoch B, served by the other one
    expect(b1!.epoch).not.toBe(a1!.epoch);
    t.stream.receive(b1!);
    expect(t.announced).toEqual([{ epoch: b1!.epoch, offset: 0, recovered: true, missed: 0 }]);
    // The first master answers again: A's publications interleave with B's.
    t.stream.receive(a2!);
    t.stream.receive(b2!);
    t.stream.receive(a3!);
    expect(t.delivered).toEqual([1, 1, 2]);
    expect(t.announced.slice(1)).toEqual([{ epoch: b1!.epoch, offset: 1, recovered: false, missed: 0 }]);
    // A subscriber that read A's history meanwhile goes on from the stream's position.
    const late = t.joiner({ epoch: a1!.epoch!, offset: 3 });
    t.stream.handOver(late.j);
    expect(late.got).toEqual(['lost@2', 'join']);
    // Having left an epoch that came back, a next one is never taken for complete.
    t.advance(61_000);
    const [c1] = t.publish(1);
    t.stream.receive(c1!);
    expect(t.announced.at(-1)).toEqual({ epoch: c1!.epoch, offset: 0, recovered: false, missed: 0 });
    expect(t.delivered).toEqual([1, 1, 2, 1]);
    expect(t.reads()).toBe(0);
  });

  it('a resync during a fill fills again: the fill under way may have read before the loss', async () => {
    const t = setup();
    await start(t);
    const [p1, , p3] = t.publish(3);
    t.stream.receive(p1!);
    t.stream.receive(p3!); // a gap: a fill starts
    t.stream.suspend();
    t.stream.resync();
    // The memory history answers at once: a few turns settle both fills.
    for (let turn = 0; turn < 100 && t.reads() < 2; turn++)
      await new Promise((resolve) => setImmediate(resolve));
    expect(t.reads()).toBe(2);
    expect(t.delivered).toEqual([1, 2, 3]);
  });

  it('queues publications until the first subscriber tells it the position', async () => {
    const t = setup();
    const [p1, p2] = t.publish(2);
    t.stream.receive(p1!);
    t.stream.receive(p2!);
    expect(t.delivered).toEqual([]);
    const page = await t.history.read(topic, { limit: 0 });
    const { j } = t.joiner({ epoch: page.epoch, offset: 1 });
    t.stream.handOver(j);
    expect(t.delivered).toEqual([2]);
  });

  it('hands a subscriber what it delivered after the subscriber read, or waits until it gets there', async () => {
    const t = setup();
    const page = await start(t);
    const [p1, p2, p3] = t.publish(3);
    t.stream.receive(p1!);
    t.stream.receive(p2!);
    // It read the topic empty (before its first publication): offset 0 of the epoch that followed.
    const behind = t.joiner({ epoch: page.epoch, offset: 0 }, page.readAt);
    t.stream.handOver(behind.j);
    expect(behind.got).toEqual([1, 2, 'join']);
    const ahead = t.joiner({ epoch: p1!.epoch!, offset: 3 });
    t.stream.handOver(ahead.j);
    expect(ahead.got).toEqual([]);
    t.stream.receive(p3!);
    expect(ahead.got).toEqual(['join']);
    // An epoch the node has not seen: history decides (here the node's own is current).
    const otherEpoch = t.joiner({ epoch: 'elsewhere', offset: 3 });
    t.stream.handOver(otherEpoch.j);
    while (otherEpoch.got.length < 2) await new Promise((resolve) => setImmediate(resolve));
    expect(otherEpoch.got).toEqual(['lost@3', 'join']);
  });

  describe('a topic without history (an empty epoch, stored nowhere)', () => {
    it('moves to the first epoch at its first publication: recovered, and the empty epoch is not one it left', async () => {
      const t = setup();
      const page = await start(t);
      expect(isEmptyEpoch(page.epoch)).toBe(true);
      const [p1, p2] = t.publish(2);
      t.stream.receive(p1!);
      t.stream.receive(p2!);
      expect(t.firstEpochs).toEqual([{ epoch: p1!.epoch, offset: 0, recovered: true, missed: 0 }]);
      expect(t.delivered).toEqual([1, 2]);
      expect(t.stream.hasLeft(page.epoch)).toBe(false);
      // A later epoch after everything was delivered is still taken for complete.
      t.advance(61_000);
      const [q1] = t.publish(1);
      t.stream.receive(q1!);
      expect(t.announced).toEqual([{ epoch: q1!.epoch, offset: 0, recovered: true, missed: 0 }]);
      expect(t.reads()).toBe(0);
    });

    it('fills from offset 1 when history says the first epoch follows its empty one', async () => {
      const t = setup();
      await start(t);
      const [, , p3] = t.publish(3);
      t.stream.receive(p3!);
      while (t.delivered.length < 3) await t.activity();
      expect(t.delivered).toEqual([1, 2, 3]);
      expect(t.firstEpochs).toEqual([{ epoch: p3!.epoch, offset: 0, recovered: true, missed: 0 }]);
      expect(t.announced).toEqual([]);
    });

    it('keeps its empty epoch across a resync while the topic stays empty: no notice, no endless reads', async () => {
      const t = setup();
      const page = await start(t);
      t.stream.suspend();
      t.advance(30_000);
      t.stream.resync();
      for (let turn = 0; turn < 100 && t.reads() < 1; turn++)
        await new Promise((resolve) => setImmediate(resolve));
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(t.reads()).toBe(1);
      expect(t.stream.position).toEqual({ epoch: page.epoch, offset: 0 });
      expect(t.announced).toEqual([]);
      // Once the TTL passed it cannot tell whether a stream came and went meanwhile: said once.
      t.stream.suspend();
      t.advance(120_000); // the TTL of these reads
      t.stream.resync();
      while (t.announced.length === 0) await t.activity();
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(t.announced).toEqual([
        { epoch: expect.stringMatching(/^_e/) as unknown, offset: 0, recovered: false, missed: 0 },
      ]);
      expect(t.reads()).toBeLessThanOrEqual(4);
    });

    it('joins subscribers that read the topic empty with other empty epochs, losing nothing', async () => {
      const t = setup();
      await start(t);
      t.advance(5);
      const readAt = performance.now();
      const other = await t.history.read(topic, { limit: 0 });
      const second = t.joiner(other, readAt);
      t.stream.handOver(second.j);
      expect(second.got).toEqual(['join']);
      t.advance(5);
      const lateAt = performance.now();
      const late = t.joiner(await t.history.read(topic, { limit: 0 }), lateAt);
      const [p1] = t.publish(1);
      t.stream.receive(p1!);
      // It read before the first publication reached the stream: it gets that publication.
      t.stream.handOver(late.j);
      expect(late.got).toEqual([1, 'join']);
      expect(t.announced).toEqual([]);
    });
  });
});
