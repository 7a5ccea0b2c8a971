import type { ConnectionCounts } from '../../src/counts/connection-counts';
import { unique } from '../support/wait';

/** The ConnectionCounts port's contract (connection-counts.ts), for any implementation. */
export function describeCountsContract(name: string, createCounts: () => Promise<ConnectionCounts>): void {
  describe(`ConnectionCounts contract: ${name}`, () => {
    let counts: ConnectionCounts;
    let key: string;

    const add = async (nodeId: string, channel: string, times: number): Promise<void> => {
      for (let i = 0; i < times; i++) await counts.increment(nodeId, key, channel);
    };

    beforeEach(async () => {
      counts = await createCounts();
      key = unique('key');
    });

    it('lists channels by count descending, then channel ascending, with sum and total', async () => {
      await add('n1', 'beta', 2);
      await add('n2', 'alpha', 2);
      await add('n1', 'gamma', 3);
      await add('n2', 'delta', 1);
      expect(await counts.list(key)).toEqual({
        items: [
          { channel: 'gamma', count: 3 },
          { channel: 'alpha', count: 2 },
          { channel: 'beta', count: 2 },
          { channel: 'delta', count: 1 },
        ],
        total: 4,
      });
      expect(await counts.sum(key)).toBe(8);
      expect(await counts.list(key, 1, 2)).toEqual({
        items: [
          { channel: 'alpha', count: 2 },
          { channel: 'beta', count: 2 },
        ],
        total: 4,
      });
      expect(await counts.list(key, 4, 2)).toEqual({ items: [], total: 4 });
    });

    it('adds the shares of several nodes and drops a channel at zero', async () => {
      await add('n1', 'room', 2);
      await add('n2', 'room', 1);
      expect((await counts.list(key)).items).toEqual([{ channel: 'room', count: 3 }]);
      await counts.decrement('n1', key, 'room');
      await counts.decrement('n1', key, 'room');
      await counts.decrement('n2', key, 'room');
      expect(await counts.list(key)).toEqual({ items: [], total: 0 });
      expect(await counts.sum(key)).toBe(0);
    });

    it("never goes below a node's own share", async () => {
      await add('n1', 'room', 1);
      await counts.decrement('n2', key, 'room');
      await counts.decrement('n1', key, 'nowhere');
      expect((await counts.list(key)).items).toEqual([{ channel: 'room', count: 1 }]);
      expect(await counts.sum(key)).toBe(1);
    });

    it('applies the changes of one event-loop turn to each channel on its own', async () => {
      await add('n1', 'a', 1);
      await Promise.all([
        counts.increment('n1', key, 'a'),
        counts.increment('n1', key, 'b'),
        counts.decrement('n1', key, 'a'),
        counts.decrement('n1', key, 'c'),
        counts.increment('n2', key, 'b'),
      ]);
      expect(await counts.list(key)).toEqual({
        items: [
          { channel: 'b', count: 2 },
          { channel: 'a', count: 1 },
        ],
        total: 2,
      });
      expect(await counts.sum(key)).toBe(3);
    });

    it('takes a turn that changes thousands of channels', async () => {
      const channels = Array.from({ length: 2500 }, (_, i) => `c${i}`);
      await Promise.all(channels.map((channel) => counts.increment('n1', key, channel)));
      expect((await counts.list(key, 0, 0)).total).toBe(2500);
      await Promise.all(channels.map((channel) => counts.decrement('n1', key, channel)));
      expect(await counts.sum(key)).toBe(0);
    });

    it("removes a node's share exactly once, even when two callers race", async () => {
      const other = unique('other');
      await add('dead', 'room', 3);
      await add('live', 'room', 2);
      await add('dead', 'solo', 1);
      await counts.increment('dead', other, 'x');
      await Promise.all([counts.removeNode('dead'), counts.removeNode('dead')]);
      expect(await counts.list(key)).toEqual({ items: [{ channel: 'room', count: 2 }], total: 1 });
      expect(await counts.sum(key)).toBe(2);
      expect(await counts.sum(other)).toBe(0);
      await counts.removeNode('dead');
      expect(await counts.sum(key)).toBe(2);
      // the node id comes back (a restart under the same NODE_ID) and starts from zero
      await add('dead', 'room', 1);
      expect(await counts.sum(key)).toBe(3);
    });

    it('reserves sockets up to the limit, atomically, and counts them apart from channels', async () => {
      const tries = await Promise.all(
        Array.from({ length: 20 }, (_, i) => counts.reserveSocket(`n${i % 3}`, key, 7)),
      );
      expect(tries.filter(Boolean)).toHaveLength(7);
      expect(await counts.sockets(key)).toBe(7);
      expect(await counts.sum(key)).toBe(0);
      const holder = `n${tries.indexOf(true) % 3}`;
      await counts.releaseSocket(holder, key);
      expect(await counts.reserveSocket('n9', key, 7)).toBe(true);
      expect(await counts.reserveSocket('n9', key, 7)).toBe(false);
      expect(await counts.reserveSocket('n9', key, 0)).toBe(true);
      expect(await counts.sockets(key)).toBe(8);
    });

    it("never releases below a node's own reservations", async () => {
      await counts.reserveSocket('n1', key, 0);
      await counts.releaseSocket('n2', key);
      expect(await counts.sockets(key)).toBe(1);
      await counts.releaseSocket('n1', key);
      await counts.releaseSocket('n1', key);
      expect(await counts.sockets(key)).toBe(0);
      expect(await counts.reserveSocket('n1', key, 1)).toBe(true);
    });

    it("takes a removed node's reservations back, once", async () => {
      await counts.reserveSocket('dead', key, 0);
      await counts.reserveSocket('dead', key, 0);
      await counts.reserveSocket('live', key, 0);
      await Promise.all([counts.removeNode('dead'), counts.removeNode('dead')]);
      expect(await counts.sockets(key)).toBe(1);
      expect(await counts.reserveSocket('live', key, 2)).toBe(true);
      expect(await counts.reserveSocket('live', key, 2)).toBe(false);
    });

    it("removes a node's share of thousands of channels", async () => {
      const channels = Array.from({ length: 2500 }, (_, i) => `c${i}`);
      await Promise.all(channels.map((channel) => counts.increment('dead', key, channel)));
      await counts.increment('live', key, 'c1');
      await counts.removeNode('dead');
      expect(await counts.list(key)).toEqual({ items: [{ channel: 'c1', count: 1 }], total: 1 });
      expect(await counts.sum(key)).toBe(1);
    });

    it('keeps the Pusher family apart from the PieSocket one, the default', async () => {
      await add('n1', 'room', 2);
      await counts.increment('n1', key, 'room', 'pusher');
      await counts.increment('n2', key, 'room', 'pusher');
      await counts.increment('n2', key, 'room', 'pusher');
      await counts.increment('n2', key, 'only-pusher', 'pusher');
      expect(await counts.list(key)).toEqual({ items: [{ channel: 'room', count: 2 }], total: 1 });
      expect(await counts.list(key, 0, 10, 'piesocket')).toEqual(await counts.list(key));
      expect(await counts.list(key, 0, 10, 'pusher')).toEqual({
        items: [
          { channel: 'room', count: 3 },
          { channel: 'only-pusher', count: 1 },
        ],
        total: 2,
      });
      expect(await counts.sum(key)).toBe(2);
      expect(await counts.sum(key, 'pusher')).toBe(4);
      // One channel's count, cluster-wide, of one family.
      expect(await counts.count(key, 'room', 'pusher')).toBe(3);
      expect(await counts.count(key, 'room')).toBe(2);
      expect(await counts.count(key, 'only-pusher')).toBe(0);
      expect(await counts.count(key, 'nowhere', 'pusher')).toBe(0);
      // A decrement of one family never takes from the other's share.
      await counts.decrement('n1', key, 'room', 'pusher');
      await counts.decrement('n1', key, 'room', 'pusher');
      expect(await counts.sum(key)).toBe(2);
      expect(await counts.sum(key, 'pusher')).toBe(3);
      await counts.removeNode('n2');
      expect(await counts.list(key, 0, 10, 'pusher')).toEqual({ items: [], total: 0 });
      expect(await counts.sum(key, 'pusher')).toBe(0);
      expect(await counts.sum(key)).toBe(2);
      await counts.removeNode('n1');
      expect(await counts.sum(key)).toBe(0);
    });

    it('keeps API keys apart', async () => {
      const other = unique('other');
      await add('n1', 'room', 2);
      await counts.increment('n1', other, 'room');
      expect(await counts.sum(key)).toBe(2);
      expect(await counts.list(other)).toEqual({ items: [{ channel: 'room', count: 1 }], total: 1 });
    });
  });
}
