import type { ConnectionCounts } from '../../src/counts/connection-counts';
import type { KeyStore } from '../../src/keys/key-store';
import { generateKeyRecord } from '../../src/keys/key-store';
import type { PresenceStore } from '../../src/presence/presence-store';
import type { Member, Topic } from '../../src/types';
import type {
  QueuedEvent,
  WebhookConfig,
  WebhookEvent,
  WebhookQueue,
  WebhookQueueLimits,
} from '../../src/webhooks/webhooks';
import { unique } from '../support/wait';

/** One engine's ports that produce and hold webhook events. */
export interface WebhookPorts {
  readonly counts: ConnectionCounts;
  readonly presence: PresenceStore;
  readonly webhooks: WebhookQueue;
  readonly keys: KeyStore;
}

/**
 * The WebhookQueue port's contract (webhooks.ts), with the events the counts and presence of the
 * same engine produce: exactly one per transition, both protocols and all nodes counted together.
 */
export function describeWebhooksContract(
  name: string,
  createPorts: (limits?: WebhookQueueLimits) => Promise<WebhookPorts>,
): void {
  describe(`WebhookQueue contract: ${name}`, () => {
    let ports: WebhookPorts;
    let key: string;

    const enable = async (webhook?: WebhookConfig): Promise<void> => {
      await ports.keys.put({
        ...generateKeyRecord(),
        key,
        ...(webhook ? { webhook } : {}),
      });
    };
    /** Every stored event, acknowledged so the next call sees only newer ones. */
    const drain = async (): Promise<WebhookEvent[]> => {
      const out: WebhookEvent[] = [];
      for (;;) {
        const batch = await ports.webhooks.next(key, 'test', 100);
        if (batch.length === 0) return out;
        out.push(...batch.map((e) => JSON.parse(e.json) as WebhookEvent));
        await ports.webhooks.ack(
          key,
          batch.map((e) => e.id),
        );
      }
    };
    const channelOf = (e: QueuedEvent): string => (JSON.parse(e.json) as WebhookEvent).channel;
    const topic = (protocol: 'v3' | 'v4', channel = 'room'): Topic => ({ key, protocol, channel });
    const entry = (connId: string, member: Member, nodeId = 'node-a') => ({ connId, nodeId, member });

    beforeEach(async () => {
      ports = await createPorts();
      key = unique('key');
    });

    it('stores nothing for a key without a webhook', async () => {
      await enable();
      await ports.counts.increment('node-a', key, 'room');
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'alice' }), 1);
      await ports.counts.decrement('node-a', key, 'room');
      await ports.presence.leave(topic('v4'), 'a/1');
      expect(await ports.webhooks.depth(key)).toBe(0);
      expect(await drain()).toEqual([]);
    });

    it('emits channel_occupied and channel_vacated once per transition, across nodes', async () => {
      await enable({ url: 'http://example.test/hook' });
      await ports.counts.increment('node-a', key, 'room');
      await ports.counts.increment('node-b', key, 'room');
      await ports.counts.increment('node-a', key, 'other');
      await ports.counts.decrement('node-a', key, 'room');
      await ports.counts.decrement('node-b', key, 'room');
      await ports.counts.increment('node-b', key, 'room');
      // A decrement the node does not hold changes nothing and emits nothing.
      await ports.counts.decrement('node-a', key, 'room');
      expect(await drain()).toEqual([
        { name: 'channel_occupied', channel: 'room' },
        { name: 'channel_occupied', channel: 'other' },
        { name: 'channel_vacated', channel: 'room' },
        { name: 'channel_occupied', channel: 'room' },
      ]);
    });

    it("emits channel_vacated when a dead node's share was the channel's last", async () => {
      await enable({ url: 'http://example.test/hook' });
      await ports.counts.increment('node-a', key, 'room');
      await ports.counts.increment('node-b', key, 'room');
      await ports.counts.increment('node-b', key, 'solo');
      await drain();
      await ports.counts.removeNode('node-b');
      expect(await drain()).toEqual([{ name: 'channel_vacated', channel: 'solo' }]);
      await ports.counts.removeNode('node-b');
      expect(await drain()).toEqual([]);
    });

    it('emits channel_occupied and channel_vacated per channel name, over the count families', async () => {
      await enable({ url: 'http://example.test/hook' });
      await ports.counts.increment('node-a', key, 'room');
      await ports.counts.increment('node-b', key, 'room', 'pusher');
      await ports.counts.decrement('node-a', key, 'room');
      await ports.counts.increment('node-b', key, 'pusher-only', 'pusher');
      await ports.counts.increment('node-a', key, 'room');
      await ports.counts.removeNode('node-b');
      await ports.counts.decrement('node-a', key, 'room');
      expect(await drain()).toEqual([
        { name: 'channel_occupied', channel: 'room' },
        { name: 'channel_occupied', channel: 'pusher-only' },
        { name: 'channel_vacated', channel: 'pusher-only' },
        { name: 'channel_vacated', channel: 'room' },
      ]);
    });

    it('emits one member_added and one member_removed per identity, over tabs, nodes and protocols', async () => {
      await enable({ url: 'http://example.test/hook' });
      const alice = (uuid: string): Member => ({ uuid, user: 'alice' });
      await ports.presence.join(topic('v4'), entry('a/1', alice('u1')), 1);
      await ports.presence.join(topic('v4'), entry('b/1', alice('u2'), 'node-b'), 2);
      await ports.presence.join(topic('v3'), entry('a/2', alice('u3')), 3);
      await ports.presence.join(topic('v3'), entry('a/3', { uuid: 'u4' }), 4);
      expect(await drain()).toEqual([
        { name: 'member_added', channel: 'room', user_id: 'alice' },
        { name: 'member_added', channel: 'room', user_id: 'u4' },
      ]);
      await ports.presence.leave(topic('v4'), 'a/1');
      await ports.presence.leave(topic('v4'), 'b/1');
      expect(await drain()).toEqual([]);
      await ports.presence.leave(topic('v3'), 'a/2');
      await ports.presence.leave(topic('v3'), 'a/2');
      expect(await drain()).toEqual([{ name: 'member_removed', channel: 'room', user_id: 'alice' }]);
    });

    it('treats a connection that joins again as another identity as one leaving and one arriving', async () => {
      await enable({ url: 'http://example.test/hook' });
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'erin' }), 1);
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'erin' }), 2);
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'fay' }), 3);
      await ports.presence.leave(topic('v4'), 'a/1');
      expect(await drain()).toEqual([
        { name: 'member_added', channel: 'room', user_id: 'erin' },
        { name: 'member_removed', channel: 'room', user_id: 'erin' },
        { name: 'member_added', channel: 'room', user_id: 'fay' },
        { name: 'member_removed', channel: 'room', user_id: 'fay' },
      ]);
    });

    it("emits member_removed for a dead node's last entries of an identity, once", async () => {
      await enable({ url: 'http://example.test/hook' });
      await ports.presence.join(topic('v4'), entry('b/1', { uuid: 'u1', user: 'bob' }, 'node-b'), 1);
      await ports.presence.join(topic('v3'), entry('b/2', { uuid: 'u2', user: 'bob' }, 'node-b'), 2);
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u3', user: 'carol' }), 3);
      await ports.presence.join(topic('v4'), entry('b/3', { uuid: 'u4', user: 'carol' }, 'node-b'), 4);
      await drain();
      await Promise.all([ports.presence.removeNode('node-b'), ports.presence.removeNode('node-b')]);
      expect(await drain()).toEqual([{ name: 'member_removed', channel: 'room', user_id: 'bob' }]);
    });

    it('stores only the events the webhook lists, and client events through append', async () => {
      await enable({ url: 'http://example.test/hook', events: ['member_added', 'client_event'] });
      await ports.counts.increment('node-a', key, 'room');
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'dave' }), 1);
      await ports.webhooks.append(key, {
        name: 'client_event',
        channel: 'room',
        event: 'typing',
        data: { on: true },
        socket_id: 'u1',
      });
      expect(await drain()).toEqual([
        { name: 'member_added', channel: 'room', user_id: 'dave' },
        { name: 'client_event', channel: 'room', event: 'typing', data: { on: true }, socket_id: 'u1' },
      ]);
    });

    it("stores cache_miss, in Pusher's format, only for a webhook that lists it (not by default)", async () => {
      const miss = { name: 'cache_miss', channel: 'cache-prices' } as const;
      await enable({ url: 'http://example.test/hook' });
      await ports.webhooks.append(key, miss);
      expect(await ports.webhooks.depth(key)).toBe(0);
      await enable({ url: 'http://example.test/hook', events: ['cache_miss'] });
      await ports.webhooks.append(key, miss);
      await ports.webhooks.append(key, { name: 'client_event', channel: 'private-room', event: 'client-x' });
      await ports.counts.increment('node-a', key, 'cache-prices');
      expect(await drain()).toEqual([{ name: 'cache_miss', channel: 'cache-prices' }]);
      await enable();
      await ports.webhooks.append(key, miss);
      expect(await drain()).toEqual([]);
    });

    it('gives back event texts exactly, whatever their data holds', async () => {
      await enable({ url: 'http://example.test/hook', events: ['client_event'] });
      const data = { text: 'two words\nand a line break, "quotes", tabs\t, ünïcödé 🙂 and  spaces ' };
      for (const socket_id of ['a/1', 'a/2'])
        await ports.webhooks.append(key, {
          name: 'client_event',
          channel: 'room',
          event: 'say',
          data,
          socket_id,
        });
      const batch = await ports.webhooks.next(key, 'test', 100);
      expect(batch.map((e) => JSON.parse(e.json) as WebhookEvent)).toEqual(
        ['a/1', 'a/2'].map((socket_id) => ({
          name: 'client_event',
          channel: 'room',
          event: 'say',
          data,
          socket_id,
        })),
      );
      expect(new Set(batch.map((e) => e.id)).size).toBe(2);
    });

    it('gives an unacknowledged batch back whole, to any consumer, until it is acknowledged', async () => {
      await enable({ url: 'http://example.test/hook' });
      for (const channel of ['c1', 'c2', 'c3']) await ports.counts.increment('node-a', key, channel);
      const first = await ports.webhooks.next(key, 'dead', 2);
      expect(first.map(channelOf)).toEqual(['c1', 'c2']);
      expect(first[0]!.storedAt).toBeGreaterThan(Date.now() - 60_000);
      const again = await ports.webhooks.next(key, 'survivor', 100);
      expect(again).toEqual(first);
      expect(await ports.webhooks.depth(key)).toBe(3);
      await ports.webhooks.ack(
        key,
        again.map((e) => e.id),
      );
      expect((await ports.webhooks.next(key, 'survivor', 100)).map(channelOf)).toEqual(['c3']);
      expect(await ports.webhooks.depth(key)).toBe(1);
    });

    it('acknowledges what a read is given before reading, in the same call', async () => {
      await enable({ url: 'http://example.test/hook' });
      for (const channel of ['c1', 'c2', 'c3']) await ports.counts.increment('node-a', key, channel);
      const first = await ports.webhooks.next(key, 'gw1', 2);
      const second = await ports.webhooks.next(
        key,
        'gw1',
        2,
        first.map((e) => e.id),
      );
      expect(second.map(channelOf)).toEqual(['c3']);
      expect(await ports.webhooks.depth(key)).toBe(1);
      // A consumer taking over gets back only what is still unacknowledged.
      const taken = await ports.webhooks.next(key, 'gw2', 100);
      expect(taken).toEqual(second);
      expect(
        await ports.webhooks.next(
          key,
          'gw2',
          100,
          taken.map((e) => e.id),
        ),
      ).toEqual([]);
      expect(await ports.webhooks.depth(key)).toBe(0);
    });

    it("forgets a deleted key's stored and pending events, and stores none after", async () => {
      await enable({ url: 'http://example.test/hook' });
      for (const channel of ['c1', 'c2']) await ports.counts.increment('node-a', key, channel);
      expect(await ports.webhooks.next(key, 'gw1', 1)).toHaveLength(1);
      expect(await ports.keys.delete(key)).toBe(true);
      expect(await ports.webhooks.next(key, 'gw1', 100)).toEqual([]);
      expect(await ports.webhooks.depth(key)).toBe(0);
      await ports.counts.increment('node-a', key, 'c3');
      await ports.presence.join(topic('v4'), entry('a/1', { uuid: 'u1', user: 'gus' }), 1);
      expect(await ports.webhooks.depth(key)).toBe(0);
      expect(await ports.webhooks.next(key, 'gw1', 100)).toEqual([]);
    });

    it('leases a key to one owner at a time until it expires', async () => {
      expect(await ports.webhooks.lease(key, 'gw1', 200)).toBe(true);
      expect(await ports.webhooks.lease(key, 'gw2', 200)).toBe(false);
      expect(await ports.webhooks.lease(key, 'gw1', 200)).toBe(true);
      const until = Date.now() + 2000;
      while (!(await ports.webhooks.lease(key, 'gw2', 200))) {
        if (Date.now() > until) throw new Error('the lease never expired');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await ports.webhooks.lease(key, 'gw1', 200)).toBe(false);
    });

    describe('limits', () => {
      /** A client event whose JSON text is `size` bytes long (at least 70). */
      const sized = (n: number, size = 100): WebhookEvent => {
        const base = { name: 'client_event' as const, channel: 'room', event: `e${n}` };
        const bare = JSON.stringify({ ...base, data: '' }).length;
        return { ...base, data: 'x'.repeat(size - bare) };
      };
      let dropped: number;
      const limited = async (limits: WebhookQueueLimits): Promise<void> => {
        ports = await createPorts(limits);
        dropped = 0;
        ports.webhooks.onDropped?.((k, events) => {
          if (k === key) dropped += events;
        });
        await enable({ url: 'http://example.test/hook', events: ['client_event'] });
      };
      const names = (events: WebhookEvent[]): Array<string | undefined> => events.map((e) => e.event);

      it('keeps at most maxEvents per key: the oldest are dropped and reported', async () => {
        await limited({ maxEvents: 5, maxBytes: 1024 * 1024 });
        for (let i = 0; i < 8; i++) await ports.webhooks.append(key, sized(i));
        expect(await ports.webhooks.depth(key)).toBe(5);
        expect(dropped).toBe(3);
        expect(names(await drain())).toEqual(['e3', 'e4', 'e5', 'e6', 'e7']);
        // What was delivered frees its room: the next five fit without a drop.
        for (let i = 8; i < 13; i++) await ports.webhooks.append(key, sized(i));
        expect(dropped).toBe(3);
      });

      it('keeps at most maxBytes of events per key, counting what is acknowledged out', async () => {
        await limited({ maxEvents: 1000, maxBytes: 1000 });
        for (let i = 0; i < 5; i++) await ports.webhooks.append(key, sized(i, 300));
        // 300 bytes each: three fit in 1000.
        expect(dropped).toBe(2);
        expect(await ports.webhooks.depth(key)).toBe(3);
        expect(names(await drain())).toEqual(['e2', 'e3', 'e4']);
        for (let i = 5; i < 8; i++) await ports.webhooks.append(key, sized(i, 300));
        expect(dropped).toBe(2);
        // An event over the whole budget is dropped by itself; the others stay.
        await ports.webhooks.append(key, sized(99, 1001));
        expect(dropped).toBe(3);
        expect(names(await drain())).toEqual(['e5', 'e6', 'e7']);
      });

      it('holds channel and presence events to the limits too, at the latest when enforceLimits runs', async () => {
        ports = await createPorts({ maxEvents: 3, maxBytes: 1024 * 1024 });
        dropped = 0;
        ports.webhooks.onDropped?.((k, events) => {
          if (k === key) dropped += events;
        });
        await enable({ url: 'http://example.test/hook' });
        for (let i = 0; i < 6; i++) await ports.counts.increment('node-a', key, `room${i}`);
        await ports.webhooks.enforceLimits?.(key);
        expect(await ports.webhooks.depth(key)).toBe(3);
        expect(dropped).toBe(3);
        expect((await drain()).map((e) => e.channel)).toEqual(['room3', 'room4', 'room5']);
      });

      it('frees the room of acknowledged events in whatever order their ids are given', async () => {
        await limited({ maxEvents: 1000, maxBytes: 1000 });
        for (let i = 0; i < 3; i++) await ports.webhooks.append(key, sized(i, 300));
        const batch = await ports.webhooks.next(key, 'gw1', 100);
        await ports.webhooks.ack(key, batch.map((e) => e.id).reverse());
        for (let i = 3; i < 6; i++) await ports.webhooks.append(key, sized(i, 300));
        expect(dropped).toBe(0);
        expect(names(await drain())).toEqual(['e3', 'e4', 'e5']);
      });

      it('drops a batch being read when it is the oldest; its acknowledgement then changes nothing', async () => {
        await limited({ maxEvents: 4, maxBytes: 1024 * 1024 });
        for (let i = 0; i < 4; i++) await ports.webhooks.append(key, sized(i));
        const batch = await ports.webhooks.next(key, 'gw1', 2);
        expect(batch.map((e) => (JSON.parse(e.json) as WebhookEvent).event)).toEqual(['e0', 'e1']);
        for (let i = 4; i < 7; i++) await ports.webhooks.append(key, sized(i));
        expect(dropped).toBe(3);
        const next = await ports.webhooks.next(
          key,
          'gw1',
          100,
          batch.map((e) => e.id),
        );
        expect(next.map((e) => (JSON.parse(e.json) as WebhookEvent).event)).toEqual(['e3', 'e4', 'e5', 'e6']);
        expect(await ports.webhooks.depth(key)).toBe(4);
      });
    });
  });
}
