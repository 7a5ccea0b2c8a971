import { MemoryBroker, createLogger } from '@switchboard/core';
import type { Topic } from '@switchboard/core';
import { BrokerSubscriptions } from '../src/fanout/broker-subscriptions';

const topic = (): Topic => ({ key: 'k', protocol: 'v4', channel: 'room' });

describe('BrokerSubscriptions', () => {
  it('lets every subscriber of a topic go on only once the broker subscription is in place', async () => {
    const broker = new MemoryBroker();
    let finish!: () => void;
    const subscribed = new Promise<void>((resolve) => (finish = resolve));
    const calls: Topic[] = [];
    broker.subscribe = async (t) => {
      calls.push(t);
      await subscribed;
    };
    const subscriptions = new BrokerSubscriptions(broker, createLogger({ level: 'silent' }));
    const order: string[] = [];
    const first = subscriptions.acquire(topic()).then(() => order.push('first'));
    const second = subscriptions.acquire(topic()).then(() => order.push('second'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    finish();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect(calls).toHaveLength(1);
  });

  it('shares one topic object among the subscribers of a topic and unsubscribes after the last', async () => {
    const broker = new MemoryBroker();
    const unsubscribed: Topic[] = [];
    broker.unsubscribe = async (t) => {
      unsubscribed.push(t);
    };
    const subscriptions = new BrokerSubscriptions(broker, createLogger({ level: 'silent' }));
    const a = await subscriptions.acquire(topic());
    const b = await subscriptions.acquire(topic());
    expect(b).toBe(a);
    subscriptions.release(topic());
    expect(unsubscribed).toEqual([]);
    subscriptions.release(topic());
    expect(unsubscribed).toEqual([topic()]);
    expect(subscriptions.has(topic())).toBe(false);
  });

  it('hands out a held topic at once only after its subscribe completed, counted like acquire', async () => {
    const broker = new MemoryBroker();
    let finish!: () => void;
    const subscribed = new Promise<void>((resolve) => (finish = resolve));
    broker.subscribe = () => subscribed;
    const unsubscribed: Topic[] = [];
    broker.unsubscribe = async (t) => {
      unsubscribed.push(t);
    };
    const subscriptions = new BrokerSubscriptions(broker, createLogger({ level: 'silent' }));
    expect(subscriptions.acquireHeld(topic())).toBeUndefined();
    const first = subscriptions.acquire(topic());
    // Subscribe in flight: a connection must wait for it, so there is nothing to hand out at once.
    expect(subscriptions.acquireHeld(topic())).toBeUndefined();
    finish();
    const shared = await first;
    expect(subscriptions.acquireHeld(topic())).toBe(shared);
    subscriptions.release(topic());
    expect(unsubscribed).toEqual([]);
    subscriptions.release(topic());
    expect(unsubscribed).toEqual([topic()]);
  });
});
