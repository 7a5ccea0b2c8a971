import { Subscriptions } from '../src/connections/connection';
import type { Subscription } from '../src/connections/connection';

// A socket's subscriptions: one held in a field, a Map only from the second on, so an idle socket
// in one channel (a V3 socket, a Pusher socket after one pusher:subscribe) keeps no Map
// (docs/performance.md, "Idle memory per connection").
const sub = (channel: string, primary: boolean): Subscription => ({
  channel,
  topic: { key: 'k', protocol: 'pusher', channel },
  primary,
  uuid: '1.2',
  user: undefined,
  userIdentity: undefined,
  info: undefined,
  presence: false,
  recover: false,
  touchedAt: 0,
  joining: undefined,
});

const maps = (subs: Subscriptions): number =>
  Object.values(subs).filter((value) => value instanceof Map).length;

describe('Subscriptions', () => {
  it('holds a first subscription that is not a primary without a Map', () => {
    const subs = new Subscriptions(undefined);
    const first = sub('orders', false);
    subs.set(first);
    expect(subs.get('orders')).toBe(first);
    expect(subs.size).toBe(1);
    expect(maps(subs)).toBe(0);
  });

  it('adds a Map from the second on and drops it when one is left', () => {
    const subs = new Subscriptions(undefined);
    subs.set(sub('a', false));
    subs.set(sub('b', false));
    expect(maps(subs)).toBe(1);
    expect(subs.values().map((s) => s.channel)).toEqual(['a', 'b']);
    subs.delete('b');
    expect(maps(subs)).toBe(0);
    expect(subs.has('a')).toBe(true);
    expect(subs.has('b')).toBe(false);
  });

  it('replaces a subscription of the same channel in place', () => {
    const subs = new Subscriptions(undefined);
    subs.set(sub('a', false));
    const again = sub('a', false);
    subs.set(again);
    expect(subs.size).toBe(1);
    expect(subs.get('a')).toBe(again);
    expect(maps(subs)).toBe(0);
  });

  it('lists the primary first, even when a secondary came before it', () => {
    const subs = new Subscriptions(undefined);
    subs.set(sub('second', false));
    subs.set(sub('primary', true));
    subs.set(sub('third', false));
    expect(subs.values().map((s) => s.channel)).toEqual(['primary', 'second', 'third']);
    subs.delete('primary');
    expect(subs.values().map((s) => s.channel)).toEqual(['second', 'third']);
    // A freed field takes the next subscription; the others stay where they are.
    subs.set(sub('fourth', false));
    expect(subs.size).toBe(3);
    expect(
      subs
        .values()
        .map((s) => s.channel)
        .sort(),
    ).toEqual(['fourth', 'second', 'third']);
  });
});
