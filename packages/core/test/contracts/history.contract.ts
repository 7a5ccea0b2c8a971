import type { Broker, Publication } from '../../src/broker/broker';
import type { History, HistoryRetention, StreamPosition } from '../../src/history/history';
import type { Topic } from '../../src/types';
import { isEmptyEpoch } from '../../src/history/empty-epochs';
import { settle, unique } from '../support/wait';
import { waitFor } from '@switchboard/harness';

/** Gateway nodes on one backend: each node's broker, and the backend's history. */
export interface HistoryEngine {
  brokers: Broker[];
  history: History;
}

export interface HistoryTarget {
  /** `nodes` brokers (and the history) over one backend. */
  start(nodes: number): Promise<HistoryEngine>;
  /**
   * Lets `ms` pass for the backend's expiry: the memory engine advances its injected clock; Redis
   * lets real time pass, so the test then polls for the expired state instead.
   */
  advance(ms: number): void;
  /** Loses every stream (memory: a new engine state; Redis: FLUSHALL); returns the engine to use now. */
  loseHistory(engine: HistoryEngine): Promise<HistoryEngine>;
  /** Whether the backend holds anything for `topic` (memory: a stream; Redis: either key). */
  holds(topic: Topic): Promise<boolean>;
  /** How much the backend holds (memory: its streams; Redis: the keys of this target on every master). */
  footprint(): Promise<number>;
  close(): Promise<void>;
}

interface Node {
  broker: Broker;
  received: Publication[];
}

/** The History port's contract (history.ts) with `Broker.publish(publication, retention)`. */
export function describeHistoryContract(name: string, createTarget: () => Promise<HistoryTarget>): void {
  describe(`History contract: ${name}`, () => {
    let target: HistoryTarget;
    let engine: HistoryEngine;
    let nodes: Node[];
    let key: string;
    const keep: HistoryRetention = { size: 5, ttlSeconds: 60 };

    const topic = (channel: string, protocol: Topic['protocol'] = 'v4'): Topic => ({
      key,
      protocol,
      channel,
    });
    const node = (i: number): Node => nodes[i] as Node;
    const attach = (e: HistoryEngine): void => {
      engine = e;
      nodes = e.brokers.map((broker) => {
        const n: Node = { broker, received: [] };
        broker.setHandlers({ message: (p) => n.received.push(p), control: () => undefined });
        return n;
      });
    };
    const positions = (publications: readonly Publication[]) =>
      publications.map((p) => ({ offset: p.offset, epoch: p.epoch, body: p.body }));
    const offsets = (publications: readonly Publication[]) => publications.map((p) => p.offset);
    const publish = (i: number, t: Topic, body: string, retention: HistoryRetention = keep) =>
      node(i).broker.publish({ topic: t, body, origin: `n${i}` }, retention);
    const publishAll = async (t: Topic, bodies: string[], retention: HistoryRetention = keep) => {
      const result: StreamPosition[] = [];
      for (const body of bodies) result.push((await publish(0, t, body, retention)) as StreamPosition);
      return result;
    };
    const read = (t: Topic, since?: number, limit = 100) =>
      engine.history.read(t, since === undefined ? { limit } : { since, limit });

    beforeEach(async () => {
      key = unique('key');
      target = await createTarget();
      attach(await target.start(2));
    });

    afterEach(async () => {
      await target.close();
    });

    it('numbers publications 1, 2, 3… in one epoch, as publish resolves and every node receives them', async () => {
      const room = topic('room');
      await node(0).broker.subscribe(room);
      await node(1).broker.subscribe(room);
      const returned = await publishAll(room, ['a', 'b', 'c']);
      await waitFor('three publications on both nodes', () => nodes.every((n) => n.received.length === 3));
      const epoch = returned[0]?.epoch as string;
      expect(epoch).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
      expect(returned).toEqual([1, 2, 3].map((offset) => ({ offset, epoch })));
      for (const n of nodes) {
        expect(positions(n.received)).toEqual([
          { offset: 1, epoch, body: 'a' },
          { offset: 2, epoch, body: 'b' },
          { offset: 3, epoch, body: 'c' },
        ]);
        expect(n.received[0]).toMatchObject({ topic: room, origin: 'n0' });
      }
    });

    it('gives every node one order under concurrent publishes from several nodes', async () => {
      const room = topic('busy');
      await node(0).broker.subscribe(room);
      await node(1).broker.subscribe(room);
      const sent = Array.from({ length: 40 }, (_, i) => `m${i}`);
      const returned = await Promise.all(sent.map((body, i) => publish(i % 2, room, body)));
      await waitFor('every publication on both nodes', () =>
        nodes.every((n) => n.received.length === sent.length),
      );
      const order = node(0).received.map((p) => p.body);
      expect(node(1).received.map((p) => p.body)).toEqual(order);
      expect(offsets(node(0).received)).toEqual(sent.map((_, i) => i + 1));
      expect(offsets(node(1).received)).toEqual(sent.map((_, i) => i + 1));
      // Each publish resolved the position its publication was delivered with.
      const delivered = new Map(node(0).received.map((p) => [p.body, p.offset]));
      returned.forEach((position, i) => expect(position?.offset).toBe(delivered.get(sent[i] as string)));
      // Each publisher's own publications keep their order.
      for (const origin of [0, 1]) {
        const mine = order.filter((body) => Number(body.slice(1)) % 2 === origin);
        expect(mine).toEqual(sent.filter((_, i) => i % 2 === origin));
      }
    });

    // Issued in one event-loop turn, as a busy gateway issues them (the Redis engine sends the
    // stream publications of one turn in one script call on a standalone server).
    it('numbers publications issued in one turn across topics in call order, per topic', async () => {
      const rooms = [topic('t0'), topic('t1'), topic('t2')];
      for (const room of rooms) await node(1).broker.subscribe(room);
      await publishAll(rooms[0] as Topic, ['before']);
      const sent = Array.from({ length: 30 }, (_, i) => ({ room: rooms[i % 3] as Topic, body: `m${i}` }));
      const wide: HistoryRetention = { size: 20, ttlSeconds: 60 };
      const returned = await Promise.all(sent.map(({ room, body }) => publish(0, room, body, wide)));
      await waitFor('every publication', () => node(1).received.length === sent.length + 1);
      for (const [r, room] of rooms.entries()) {
        const mine = sent.filter((_, i) => i % 3 === r).map((p) => p.body);
        const first = r === 0 ? 2 : 1;
        const expected = mine.map((body, i) => ({ offset: first + i, body }));
        const epoch = (await read(room, undefined, 0)).epoch;
        expect(returned.filter((_, i) => i % 3 === r)).toEqual(
          expected.map(({ offset }) => ({ offset, epoch })),
        );
        const received = node(1).received.filter(
          (p) => p.topic.channel === room.channel && p.body !== 'before',
        );
        expect(positions(received)).toEqual(expected.map((e) => ({ ...e, epoch })));
        expect(positions((await read(room, first - 1)).publications)).toEqual(
          expected.map((e) => ({ ...e, epoch })),
        );
      }
    });

    it('applies each publication its own retention within one turn', async () => {
      const small = topic('small');
      const off = topic('off-in-turn');
      const big = topic('big');
      await publishAll(small, ['s0']);
      const calls = [
        publish(0, small, 's1', { size: 2, ttlSeconds: 60 }),
        publish(0, off, 'o1', { size: 0, ttlSeconds: 60 }),
        publish(0, big, 'b1', { size: 10, ttlSeconds: 60 }),
        publish(0, small, 's2', { size: 2, ttlSeconds: 60 }),
        publish(0, big, 'b2', { size: 10, ttlSeconds: 60 }),
        publish(0, small, 's3', { size: 1, ttlSeconds: 60 }),
        publish(0, off, 'o2', { size: 0, ttlSeconds: 60 }),
      ];
      expect((await Promise.all(calls)).map((p) => p?.offset)).toEqual([2, 1, 1, 3, 2, 4, 2]);
      expect((await read(small, 0)).publications.map((p) => p.body)).toEqual(['s3']);
      expect(await read(off, 0)).toMatchObject({ offset: 2, publications: [] });
      expect((await read(big, 0)).publications.map((p) => p.body)).toEqual(['b1', 'b2']);
    });

    it('delivers a plain publish issued after stream publishes in the same turn after them', async () => {
      const room = topic('mixed-turn');
      await node(1).broker.subscribe(room);
      const b = node(0).broker;
      const calls = [
        publish(0, room, 's1'),
        publish(0, room, 's2'),
        b.publish({ topic: room, body: 'plain', origin: 'n0' }),
        publish(0, room, 's3'),
        b.publish({ topic: room, body: 'direct', origin: 'n0', to: 'bob' }),
      ];
      await Promise.all(calls);
      await waitFor('five publications', () => node(1).received.length === 5);
      expect(node(1).received.map((p) => [p.body, p.offset])).toEqual([
        ['s1', 1],
        ['s2', 2],
        ['plain', undefined],
        ['s3', 3],
        ['direct', undefined],
      ]);
    });

    it('keeps streams apart per topic: key, protocol and channel', async () => {
      await publishAll(topic('a'), ['a1', 'a2']);
      await publishAll(topic('a', 'v3'), ['v3']);
      await publishAll(topic('b'), ['b1']);
      const other = { key: unique('other'), protocol: 'v4' as const, channel: 'a' };
      expect(await node(0).broker.publish({ topic: other, body: 'x', origin: 'n0' }, keep)).toMatchObject({
        offset: 1,
      });
      expect((await read(topic('a'))).publications.map((p) => p.body)).toEqual(['a1', 'a2']);
      expect((await read(topic('a', 'v3'))).offset).toBe(1);
      expect((await read(topic('b'))).offset).toBe(1);
    });

    it('reads the latest publications, or those after `since`, at most `limit`, in ascending order', async () => {
      const room = topic('room');
      const [first] = await publishAll(room, ['a', 'b', 'c', 'd']);
      const epoch = first?.epoch;
      const all = await read(room);
      expect(all.offset).toBe(4);
      expect(all.epoch).toBe(epoch);
      expect(positions(all.publications)).toEqual(
        ['a', 'b', 'c', 'd'].map((body, i) => ({ offset: i + 1, epoch, body })),
      );
      expect(all.publications[0]).toMatchObject({ topic: room, origin: 'n0' });
      expect(offsets((await read(room, undefined, 2)).publications)).toEqual([3, 4]);
      expect(offsets((await read(room, 1)).publications)).toEqual([2, 3, 4]);
      expect(offsets((await read(room, 1, 2)).publications)).toEqual([2, 3]);
      expect(offsets((await read(room, 0, 1)).publications)).toEqual([1]);
      expect((await read(room, 4)).publications).toEqual([]);
      expect(await read(room, 9)).toEqual({ offset: 4, epoch, publications: [] });
      expect((await read(room, undefined, 0)).publications).toEqual([]);
      // Whatever a caller let through: a `since` or `limit` that is not a positive integer reads as 0.
      for (const bad of [-3, 1.5, Number.NaN, Infinity]) {
        expect(offsets((await read(room, bad)).publications)).toEqual([1, 2, 3, 4]);
        expect((await read(room, 0, bad)).publications).toEqual([]);
        expect(await engine.history.read(room, { limit: 1, ttlSeconds: bad })).toMatchObject({
          offset: 4,
          epoch,
        });
      }
    });

    it('reports offset 0 in an empty epoch for an unknown topic, stores nothing, and the first stream follows it', async () => {
      const fresh = topic('fresh');
      const before = await read(fresh);
      expect(before).toEqual({
        offset: 0,
        epoch: expect.stringMatching(/^[A-Za-z0-9_-]{1,32}$/) as unknown,
        publications: [],
      });
      expect(isEmptyEpoch(before.epoch)).toBe(true);
      expect(await target.holds(fresh)).toBe(false);
      // Handed back, the empty epoch still holds: nothing was published since it was read.
      expect((await engine.history.read(fresh, { limit: 10, at: before.epoch })).epoch).toBe(before.epoch);
      expect((await engine.history.read(fresh, { since: 0, limit: 10, at: before.epoch })).epoch).toBe(
        before.epoch,
      );
      // The first publication starts a real epoch, never an empty one, and it follows the empty
      // epoch read before it: a client that read it resumes from offset 0 and misses nothing.
      const first = (await publish(1, fresh, 'x')) as StreamPosition;
      expect(first.offset).toBe(1);
      expect(isEmptyEpoch(first.epoch)).toBe(false);
      expect(first.epoch).not.toBe(before.epoch);
      expect(await target.holds(fresh)).toBe(true);
      const resumed = await engine.history.read(fresh, { since: 0, limit: 10, at: before.epoch });
      expect(resumed).toMatchObject({ offset: 1, epoch: first.epoch, follows: before.epoch });
      expect(positions(resumed.publications)).toEqual([{ offset: 1, epoch: first.epoch, body: 'x' }]);
      // Without an empty epoch to judge, nothing follows.
      expect((await read(fresh, 0)).follows).toBeUndefined();
      expect(
        (await engine.history.read(fresh, { since: 0, limit: 1, at: first.epoch })).follows,
      ).toBeUndefined();
    });

    it('stores nothing for reads of topics never published to, whatever they ask', async () => {
      await publishAll(topic('warm'), ['a']); // the backend in use, its scripts loaded
      const before = await target.footprint();
      const junk = ['', 'x', '_e', `_e${'0'.repeat(12)}${'9'.repeat(13)}`, 'a'.repeat(32)];
      for (let i = 0; i < 60; i++) {
        const t = topic(`never-${i}`, i % 2 === 0 ? 'v4' : 'pusher');
        const page = await engine.history.read(t, {
          limit: i % 3,
          ...(i % 4 === 0 ? {} : { since: i % 5 }),
          ...(i % 7 === 0 ? {} : { ttlSeconds: 1 + (i % 9) }),
          ...(i % 5 === 0 ? {} : { at: junk[i % junk.length]! }),
        });
        expect(page).toMatchObject({ offset: 0, publications: [] });
        expect(isEmptyEpoch(page.epoch)).toBe(true);
      }
      expect(await target.footprint()).toBe(before);
    });

    it('judges an empty epoch handed back: its TTL, its state, and a read time ahead of the clock', async () => {
      const room = topic('judged');
      const ttl = (ttlSeconds: number, at?: string) =>
        engine.history.read(room, { since: 0, limit: 10, ttlSeconds, ...(at === undefined ? {} : { at }) });
      const read60 = await ttl(60);
      // Another TTL than the one it was read with: not judged (a TTL changed since the read).
      expect((await ttl(30, read60.epoch)).epoch).not.toBe(read60.epoch);
      expect((await ttl(60, read60.epoch)).epoch).toBe(read60.epoch);
      // A made-up read time far ahead of the engine's clock is not believed.
      const ahead = read60.epoch.slice(0, 14) + String(Date.now() + 3_600_000).padStart(13, '0');
      expect((await ttl(60, ahead)).epoch).not.toBe(ahead);
      // Once the TTL passed since the read, a stream may have come and gone unseen: not the same.
      const short = await ttl(1);
      target.advance(1000);
      await waitFor(
        'the empty epoch to age past its TTL',
        async () => (await ttl(1, short.epoch)).epoch !== short.epoch,
      );
      // And a stream created a TTL or more after the read does not follow it.
      await publish(0, room, 'late', { size: 5, ttlSeconds: 1 });
      const later = await ttl(1, short.epoch);
      expect(later.offset).toBe(1);
      expect(later.follows).toBeUndefined();
    });

    it('keeps only the latest publications that fit in `maxBytes`, the latest always', async () => {
      const room = topic('bytes');
      const body = (c: string) => c.repeat(1000);
      const capped: HistoryRetention = { size: 100, ttlSeconds: 60, maxBytes: 3500 };
      const returned = await publishAll(room, ['a', 'b', 'c', 'd', 'e'].map(body), capped);
      expect(returned.map((p) => p.offset)).toEqual([1, 2, 3, 4, 5]);
      expect(offsets((await read(room)).publications)).toEqual([3, 4, 5]);
      // An older `since` sees the trimmed range as incomplete: its first offset is past since + 1.
      expect(offsets((await read(room, 1)).publications)).toEqual([3, 4, 5]);
      // One publication over the cap alone is kept alone.
      await publish(0, room, 'z'.repeat(5000), capped);
      expect(offsets((await read(room)).publications)).toEqual([6]);
      await publish(0, room, body('f'), capped);
      expect(offsets((await read(room)).publications)).toEqual([7]);
      await publishAll(room, ['g', 'h'].map(body), capped);
      expect(offsets((await read(room)).publications)).toEqual([7, 8, 9]);
      // Entries trimmed by `size` free their bytes too: within the cap again, 3 fit.
      await publishAll(room, ['i', 'j'].map(body), { ...capped, size: 2 });
      expect(offsets((await read(room)).publications)).toEqual([10, 11]);
      await publish(0, room, body('k'), capped);
      expect(offsets((await read(room)).publications)).toEqual([10, 11, 12]);
      // History turned off and on again counts afresh.
      await publish(0, room, body('l'), { ...capped, size: 0 });
      await publishAll(room, ['m', 'n', 'o', 'p'].map(body), capped);
      expect(offsets((await read(room)).publications)).toEqual([15, 16, 17]);
      // Issued in one turn (one script call on a standalone Redis), each is capped as it is stored.
      await Promise.all(['q', 'r', 's', 't'].map((c) => publish(0, room, body(c), capped)));
      expect(offsets((await read(room)).publications)).toEqual([19, 20, 21]);
    });

    it('keeps only the last `size` publications: an older `since` gets an incomplete range', async () => {
      const room = topic('room');
      await publishAll(room, ['1', '2', '3', '4', '5', '6', '7'], { size: 3, ttlSeconds: 60 });
      const page = await read(room);
      expect(page.offset).toBe(7);
      expect(offsets(page.publications)).toEqual([5, 6, 7]);
      expect(offsets((await read(room, 2)).publications)).toEqual([5, 6, 7]);
      expect(offsets((await read(room, 5)).publications)).toEqual([6, 7]);
      // A smaller size trims at the next publication; a larger one keeps growing from there.
      await publish(0, room, '8', { size: 2, ttlSeconds: 60 });
      expect(offsets((await read(room)).publications)).toEqual([7, 8]);
      await publishAll(room, ['9', '10'], { size: 4, ttlSeconds: 60 });
      expect(offsets((await read(room)).publications)).toEqual([7, 8, 9, 10]);
    });

    it('with size 0 stores nothing, yet offsets still advance in one epoch', async () => {
      const room = topic('off');
      await node(1).broker.subscribe(room);
      const returned = await publishAll(room, ['a', 'b'], { size: 0, ttlSeconds: 60 });
      expect(returned.map((p) => p.offset)).toEqual([1, 2]);
      expect(returned[1]?.epoch).toBe(returned[0]?.epoch);
      await waitFor('both publications', () => node(1).received.length === 2);
      expect(offsets(node(1).received)).toEqual([1, 2]);
      expect(await read(room)).toEqual({ offset: 2, epoch: returned[0]?.epoch, publications: [] });
      // Turning history off for a topic that had some drops what it had.
      const was = topic('was-on');
      await publishAll(was, ['a', 'b']);
      await publish(0, was, 'c', { size: 0, ttlSeconds: 60 });
      expect(await read(was, 0)).toMatchObject({ offset: 3, publications: [] });
    });

    it('expires the whole stream `ttlSeconds` after its latest publication: a new epoch from offset 1', async () => {
      const room = topic('room');
      const short: HistoryRetention = { size: 5, ttlSeconds: 1 };
      const [first] = await publishAll(room, ['a', 'b'], short);
      target.advance(1000);
      await waitForNewEpoch(room, first?.epoch as string);
      const after = await read(room);
      expect(after.offset).toBe(0);
      expect(after.publications).toEqual([]);
      expect(after.epoch).not.toBe(first?.epoch);
      expect(isEmptyEpoch(after.epoch)).toBe(true);
      const next = (await publish(0, room, 'c', short)) as StreamPosition;
      expect(next.offset).toBe(1);
      expect([first?.epoch, after.epoch]).not.toContain(next.epoch);
      const resumed = await engine.history.read(room, { since: 0, limit: 10, at: after.epoch });
      expect(resumed.follows).toBe(after.epoch);
      expect(positions(resumed.publications)).toEqual([{ offset: 1, epoch: next.epoch, body: 'c' }]);
    });

    it('keeps a stream alive while publications keep coming within `ttlSeconds`', async () => {
      const room = topic('room');
      const retention: HistoryRetention = { size: 5, ttlSeconds: 2 };
      const [first] = await publishAll(room, ['a'], retention);
      target.advance(1500);
      await publish(0, room, 'b', retention);
      target.advance(1500);
      // Memory: 3 s after the first, 1.5 s after the latest; Redis: whatever time passed, the
      // TTL was renewed by the latest publication, so it is still there.
      expect(await read(room)).toMatchObject({ offset: 2, epoch: first?.epoch });
      expect(offsets((await read(room)).publications)).toEqual([1, 2]);
    });

    it('starts a new epoch from offset 1 once the history is lost', async () => {
      const room = topic('room');
      const [first] = await publishAll(room, ['a', 'b', 'c']);
      attach(await target.loseHistory(engine));
      await node(0).broker.subscribe(room);
      const page = await read(room);
      expect(page.offset).toBe(0);
      expect(page.epoch).not.toBe(first?.epoch);
      const next = (await publish(1, room, 'd')) as StreamPosition;
      expect(next.offset).toBe(1);
      expect([first?.epoch, page.epoch]).not.toContain(next.epoch);
      await waitFor('the publication of the new epoch', () => node(0).received.length === 1);
      expect(positions(node(0).received)).toEqual([{ offset: 1, epoch: next.epoch, body: 'd' }]);
    });

    it('fans out publications without retention plainly: no offset, and the stream does not move', async () => {
      const room = topic('room');
      await node(1).broker.subscribe(room);
      await publishAll(room, ['a']);
      expect(await node(0).broker.publish({ topic: room, body: 'presence', origin: 'n0' })).toBeUndefined();
      await node(0).broker.publish({ topic: room, body: 'direct', origin: 'n0', to: 'bob' });
      await publishAll(room, ['b']);
      await waitFor('four publications', () => node(1).received.length === 4);
      expect(node(1).received.map((p) => [p.body, p.offset, p.epoch !== undefined])).toEqual([
        ['a', 1, true],
        ['presence', undefined, false],
        ['direct', undefined, false],
        ['b', 2, true],
      ]);
      expect(node(1).received[2]).toEqual({ topic: room, body: 'direct', origin: 'n0', to: 'bob' });
      expect((await read(room)).publications.map((p) => p.body)).toEqual(['a', 'b']);
      await settle();
      expect(node(0).received).toEqual([]);
    });

    /** Polls the topic's position until its epoch differs from `epoch` (Redis expires in real time). */
    async function waitForNewEpoch(t: Topic, epoch: string): Promise<void> {
      const deadline = Date.now() + 5000;
      for (;;) {
        if ((await read(t, undefined, 0)).epoch !== epoch) return;
        if (Date.now() > deadline) throw new Error('the stream did not expire');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
}
