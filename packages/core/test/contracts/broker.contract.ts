import type { Broker, ControlCommand, Publication, RequestedCommand } from '../../src/broker/broker';
import type { Topic } from '../../src/types';
import { settle, unique } from '../support/wait';
import { waitFor } from '@switchboard/harness';

/** Several brokers on one backend, each standing for a gateway node. */
export interface BrokerNodes {
  brokers: Broker[];
  /** One more broker on the same backend (closed by `close`). */
  addBroker(): Promise<Broker>;
  /**
   * A receiver of control commands that executes and never replies, as a node of an older
   * version does (closed by `close`).
   */
  addSilentReceiver(): Promise<void>;
  close(): Promise<void>;
}

interface Node {
  broker: Broker;
  messages: Publication[];
  controls: ControlCommand[];
}

/** The Broker port's contract (broker.ts), for any implementation. */
export function describeBrokerContract(
  name: string,
  createNodes: (count: number) => Promise<BrokerNodes>,
): void {
  describe(`Broker contract: ${name}`, () => {
    let cluster: BrokerNodes;
    let nodes: Node[];
    let key: string;

    const topic = (channel: string, protocol: Topic['protocol'] = 'v4'): Topic => ({
      key,
      protocol,
      channel,
    });
    const node = (i: number): Node => nodes[i] as Node;
    const bodies = (n: Node, t?: Topic): string[] =>
      n.messages
        .filter((m) => !t || (m.topic.channel === t.channel && m.topic.protocol === t.protocol))
        .map((m) => m.body);

    beforeEach(async () => {
      key = unique('key');
      cluster = await createNodes(3);
      nodes = cluster.brokers.map((broker) => {
        const n: Node = { broker, messages: [], controls: [] };
        broker.setHandlers({
          message: (p) => void n.messages.push(p),
          control: (c) => void n.controls.push(c),
        });
        return n;
      });
    });

    afterEach(async () => {
      await cluster.close();
    });

    it('delivers to every subscribed node, the publishing node included, and to no other', async () => {
      const room = topic('room');
      await node(0).broker.subscribe(room);
      await node(1).broker.subscribe(room);
      await node(0).broker.publish({ topic: room, body: 'hello', origin: 'n0' });
      await waitFor(
        'delivery on both subscribed nodes',
        () => bodies(node(0)).length === 1 && bodies(node(1)).length === 1,
      );
      await settle();
      expect(node(2).messages).toEqual([]);
      expect(node(0).messages).toEqual([{ topic: room, body: 'hello', origin: 'n0' }]);
    });

    it('hands over the publication unchanged: body verbatim, origin, flags and direct target', async () => {
      const room = topic('chat.room-1');
      await node(1).broker.subscribe(room);
      const publications: Publication[] = [
        { topic: room, body: '{"event":"x","data":"a|b|c\\n","meta":{}}', origin: 'node-a', stampable: true },
        { topic: room, body: 'aGVsbG8=', origin: 'node-a', binary: true },
        {
          topic: room,
          body: 'für dich 🎉 | 5|x',
          origin: 'node-b',
          to: 'user|with|pipes 🎉',
          stampable: true,
        },
        { topic: room, body: '', origin: 'node-c', to: '' },
        { topic: room, body: '12|3|', origin: 'node-c', binary: true, stampable: true, to: '{"id":7}' },
      ];
      for (const p of publications) await node(0).broker.publish(p);
      await waitFor('all publications', () => node(1).messages.length === publications.length);
      expect(node(1).messages).toEqual(publications);
    });

    it('keeps the order of one publisher on one topic', async () => {
      const room = topic('ordered');
      await node(1).broker.subscribe(room);
      const sent = Array.from({ length: 200 }, (_, i) => `m${i}`);
      await Promise.all(sent.map((body) => node(0).broker.publish({ topic: room, body, origin: 'n0' })));
      await waitFor('200 messages', () => node(1).messages.length === sent.length);
      expect(bodies(node(1))).toEqual(sent);
    });

    it('separates topics by API key, protocol and channel', async () => {
      const v4 = topic('same');
      const v3 = topic('same', 'v3');
      const otherKey: Topic = { key: unique('other'), protocol: 'v4', channel: 'same' };
      await node(1).broker.subscribe(v4);
      await node(2).broker.subscribe(v3);
      await node(2).broker.subscribe(otherKey);
      await node(0).broker.publish({ topic: v3, body: 'for v3', origin: 'n0' });
      await node(0).broker.publish({ topic: otherKey, body: 'for other key', origin: 'n0' });
      await node(0).broker.publish({ topic: v4, body: 'for v4', origin: 'n0' });
      await waitFor('three deliveries', () => node(1).messages.length === 1 && node(2).messages.length === 2);
      await settle();
      expect(node(1).messages).toEqual([{ topic: v4, body: 'for v4', origin: 'n0' }]);
      expect(bodies(node(2), v3)).toEqual(['for v3']);
      expect(node(2).messages.find((m) => m.topic.key === otherKey.key)?.body).toBe('for other key');
    });

    it('stops delivery after unsubscribe; subscribe and unsubscribe are idempotent', async () => {
      const room = topic('toggle');
      const witness = node(2);
      await witness.broker.subscribe(room);
      await node(1).broker.subscribe(room);
      await node(1).broker.subscribe(room);
      await node(0).broker.publish({ topic: room, body: 'one', origin: 'n0' });
      await waitFor('first message', () => bodies(node(1)).length === 1 && bodies(witness).length === 1);
      await settle();
      expect(bodies(node(1))).toEqual(['one']);

      await node(1).broker.unsubscribe(room);
      await node(1).broker.unsubscribe(room);
      await node(0).broker.publish({ topic: room, body: 'two', origin: 'n0' });
      await waitFor('second message at the witness', () => bodies(witness).length === 2);
      await settle();
      expect(bodies(node(1))).toEqual(['one']);

      await node(1).broker.subscribe(room);
      await node(0).broker.publish({ topic: room, body: 'three', origin: 'n0' });
      await waitFor('third message', () => bodies(node(1)).length === 2);
      expect(bodies(node(1))).toEqual(['one', 'three']);
    });

    it('delivers control commands to every node, the sender included', async () => {
      const commands: ControlCommand[] = [
        { type: 'kick', selector: { key, user: 'u1', channel: 'room', reason: 'bye' } },
        { type: 'key-changed', key },
        { type: 'node-dead', nodeId: 'node-x' },
      ];
      for (const command of commands) await node(1).broker.publishControl(command);
      await waitFor('controls on all nodes', () => nodes.every((n) => n.controls.length === commands.length));
      for (const n of nodes) expect(n.controls).toEqual(commands);
    });

    const kickOf = (user: string): RequestedCommand => ({
      type: 'kick',
      selector: { key, user, reason: 'bye' },
    });

    it("answers a requested command with the sum of every node's count, the sender's included", async () => {
      const counts = [2, 3, undefined];
      nodes.forEach((n, i) =>
        n.broker.setHandlers({
          message: () => undefined,
          control: (c) => {
            n.controls.push(c);
            return counts[i];
          },
        }),
      );
      const answer = await node(1).broker.requestControl(kickOf('u1'), 5000);
      expect(answer).toEqual({ total: 5, replies: 3, receivers: 3, complete: true });
      for (const n of nodes) {
        expect(n.controls).toEqual([
          { ...kickOf('u1'), request: { id: expect.any(String), origin: expect.any(String) } },
        ]);
      }
    });

    it('counts concurrent requests apart', async () => {
      for (const n of nodes)
        n.broker.setHandlers({
          message: () => undefined,
          control: (c) => (c.type === 'kick' ? Number(c.selector.user) : 0),
        });
      const answers = await Promise.all(
        ['1', '10', '100'].map((user, i) => node(i).broker.requestControl(kickOf(user), 5000)),
      );
      expect(answers.map((a) => [a.total, a.complete])).toEqual([
        [3, true],
        [30, true],
        [300, true],
      ]);
    });

    it('counts a broker without handlers (a process without connections) as a reply of 0', async () => {
      await cluster.addBroker();
      for (const n of nodes) n.broker.setHandlers({ message: () => undefined, control: () => 4 });
      const answer = await node(0).broker.requestControl(kickOf('u1'), 5000);
      expect(answer).toEqual({ total: 12, replies: 4, receivers: 4, complete: true });
    });

    it('answers at the deadline with what was counted when a receiver does not reply (an older node)', async () => {
      await cluster.addSilentReceiver();
      for (const n of nodes) n.broker.setHandlers({ message: () => undefined, control: () => 1 });
      const started = Date.now();
      const answer = await node(2).broker.requestControl(kickOf('u1'), 300);
      const took = Date.now() - started;
      expect(answer).toEqual({ total: 3, replies: 3, receivers: 4, complete: false });
      expect(took).toBeGreaterThanOrEqual(290);
      expect(took).toBeLessThan(2000);
    });

    it('sends no reply from a node whose handler threw: the answer is partial', async () => {
      const failures: string[] = [];
      nodes.forEach((n, i) =>
        n.broker.setHandlers({
          message: () => undefined,
          control: () => {
            if (i === 1) throw new Error('kick bug');
            return 1;
          },
          failed: (_kind, error) => failures.push((error as Error).message),
        }),
      );
      const answer = await node(0).broker.requestControl(kickOf('u1'), 300);
      expect(answer).toEqual({ total: 2, replies: 2, receivers: 3, complete: false });
      expect(failures).toEqual(['kick bug']);
    });

    it('keeps a throwing handler to its node: reported to `failed`, the publisher unaffected, the next message handled', async () => {
      const receiver = node(1);
      const failures: Array<[string, string]> = [];
      receiver.broker.setHandlers({
        message: (p) => {
          if (p.body === 'boom') throw new Error('message bug');
          receiver.messages.push(p);
        },
        control: (c) => {
          if (c.type === 'node-dead') throw new Error('control bug');
          receiver.controls.push(c);
        },
        failed: (kind, error) => failures.push([kind, (error as Error).message]),
      });
      const room = topic('room');
      await receiver.broker.subscribe(room);
      await node(0).broker.publish({ topic: room, body: 'boom', origin: 'n0' });
      await node(0).broker.publish({ topic: room, body: 'after', origin: 'n0' });
      await node(0).broker.publishControl({ type: 'node-dead', nodeId: 'n9' });
      await node(0).broker.publishControl({ type: 'key-changed', key });
      await waitFor(
        'the messages after the failures',
        () => bodies(receiver).includes('after') && receiver.controls.length === 1,
      );
      expect(failures).toEqual([
        ['publication', 'message bug'],
        ['control', 'control bug'],
      ]);
      expect(receiver.controls).toEqual([{ type: 'key-changed', key }]);
    });

    it('delivers nothing after close', async () => {
      const room = topic('closing');
      await node(1).broker.subscribe(room);
      await node(2).broker.subscribe(room);
      await node(1).broker.close();
      await node(0).broker.publish({ topic: room, body: 'after close', origin: 'n0' });
      await node(0).broker.publishControl({ type: 'key-changed', key });
      await waitFor('witness delivery', () => node(2).messages.length === 1 && node(2).controls.length === 1);
      await settle();
      expect(node(1).messages).toEqual([]);
      expect(node(1).controls).toEqual([]);
    });
  });
}
