import type { Topic } from '@switchboard/core';
import type { ConnectionState } from '../src/connections/connection';
import { Registry } from '../src/fanout/registry';

/** A socket as the registry sees it: its id, key and dialect's topic prefixes. */
const socket = (id: string): ConnectionState =>
  ({ id, key: 'k', dialect: { variants: { primary: 'p' } } }) as unknown as ConnectionState;

const topic = (channel: string): Topic => ({ key: 'k', protocol: 'pusher', channel });

describe('Registry.local', () => {
  it('finds a topic by value, and follows joins and leaves after a lookup kept it', () => {
    const registry = new Registry();
    const a = socket('a');
    const b = socket('b');
    expect(registry.local(topic('one'))).toBeUndefined();
    registry.joinTopic(topic('one'), a);
    const one = registry.local(topic('one'));
    expect(one?.sockets).toEqual(new Set([a]));
    // Another object with the same value, again and again: the same entry.
    expect(registry.local(topic('one'))).toBe(one);
    expect(registry.local({ ...topic('one'), protocol: 'v3' })).toBeUndefined();
    expect(registry.local({ ...topic('one'), key: 'other' })).toBeUndefined();
    expect(registry.local(topic('one'))).toBe(one);
    registry.joinTopic(topic('one'), b);
    expect(registry.local(topic('one'))?.sockets).toEqual(new Set([a, b]));
    expect(registry.local(topic('two'))).toBeUndefined();
    registry.joinTopic(topic('two'), b);
    expect(registry.local(topic('two'))?.sockets).toEqual(new Set([b]));
    registry.leaveTopic(topic('one'), a);
    registry.leaveTopic(topic('one'), b);
    expect(registry.local(topic('one'))).toBeUndefined();
    registry.joinTopic(topic('one'), a);
    expect(registry.local(topic('one'))?.sockets).toEqual(new Set([a]));
    expect(registry.local(topic('two'))?.sockets).toEqual(new Set([b]));
  });
});
