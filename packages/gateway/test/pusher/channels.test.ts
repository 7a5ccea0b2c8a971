import { isPusherCacheTopic } from '@switchboard/core';
import {
  CHANNEL_NAME_MAX_LENGTH,
  channelNameProblem,
  classifyChannel,
  createSocketIdAllocator,
  isSocketId,
  parseChannel,
  parseConnectQuery,
  appKeyOfPath,
  randomNodeNumber,
  reconnectAfterClose,
  PUSHER_ERRORS,
} from '../../src/protocols/pusher';

describe('channel names', () => {
  it('accept 1 to 164 characters of A-Za-z0-9_-=@,.;', () => {
    expect(channelNameProblem('a')).toBeUndefined();
    expect(channelNameProblem('App.Models.User.1')).toBeUndefined();
    expect(channelNameProblem('a_-=@,.;Z9')).toBeUndefined();
    expect(channelNameProblem('x'.repeat(CHANNEL_NAME_MAX_LENGTH))).toBeUndefined();
    expect(channelNameProblem('x'.repeat(CHANNEL_NAME_MAX_LENGTH + 1))).toMatch(/^Channel name too long/);
    expect(channelNameProblem('')).toMatch(/^Invalid channel name/);
    expect(channelNameProblem('a b')).toMatch(/^Invalid channel name: 'a b'/);
    expect(channelNameProblem('a/b')).toBeDefined();
    expect(channelNameProblem('#server-to-user-1')).toBeDefined();
    expect(channelNameProblem(42)).toBeDefined();
    // A hostile name is not echoed whole.
    expect((channelNameProblem('!'.repeat(5000)) ?? '').length).toBeLessThan(200);
  });

  it.each([
    ['orders', 'public', false, false, false],
    ['cache-scores', 'public', true, false, false],
    ['private-orders', 'private', false, true, true],
    ['private-cache-orders', 'private', true, true, true],
    ['presence-room', 'presence', false, true, true],
    ['presence-cache-room', 'presence', true, true, true],
    ['private-encrypted-vault', 'encrypted', false, true, false],
    ['private-encrypted-cache-vault', 'encrypted', true, true, false],
    ['privateer', 'public', false, false, false],
  ])('%s is %s (cache %s, auth %s, client events %s)', (name, kind, cache, needsAuth, clientEvents) => {
    expect(classifyChannel(name)).toEqual({ name, kind, cache, needsAuth, clientEvents });
  });

  it('admits #server-to-user-<id> only where asked', () => {
    expect(parseChannel('#server-to-user-u1')).toMatchObject({ ok: false });
    expect(parseChannel('#server-to-user-u1', { allowServerToUser: true })).toMatchObject({
      ok: true,
      value: { kind: 'server-to-user', userId: 'u1', needsAuth: false },
    });
    expect(parseChannel('#server-to-user-', { allowServerToUser: true })).toMatchObject({ ok: false });
  });
});

describe('socket ids', () => {
  it('are <digits>.<digits>, distinct across allocators with distinct node numbers', () => {
    const a = createSocketIdAllocator(1);
    const b = createSocketIdAllocator(11);
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      ids.add(a.next());
      ids.add(b.next());
    }
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(isSocketId(id)).toBe(true);
    // 1.11 from node 1 and 11.1 from node 11 differ: the dot separates them.
    expect(ids.has('1.11') && ids.has('11.1')).toBe(true);
    expect(isSocketId(createSocketIdAllocator(randomNodeNumber()).next())).toBe(true);
    expect(isSocketId('1.2.3')).toBe(false);
    expect(isSocketId('a.1')).toBe(false);
    expect(() => createSocketIdAllocator(-1)).toThrow(RangeError);
  });
});

describe('connection URL', () => {
  it('reads the key of /app/{key} and requires protocol 7', () => {
    expect(appKeyOfPath('/app/abc')).toBe('abc');
    expect(appKeyOfPath('/app/')).toBeUndefined();
    expect(appKeyOfPath('/app/a/b')).toBeUndefined();
    expect(appKeyOfPath('/v3/abc')).toBeUndefined();
    expect(parseConnectQuery('protocol=7&client=js&version=8.6.0&flash=false')).toEqual({
      protocol: 7,
      client: 'js',
      version: '8.6.0',
    });
    expect(parseConnectQuery('client=js')).toEqual({ refusal: expect.stringContaining('none given') });
    expect(parseConnectQuery('protocol=6')).toEqual({ refusal: expect.stringContaining('6') });
  });
});

describe('codes', () => {
  it('are in the range that makes pusher-js do what each promises', () => {
    for (const spec of Object.values(PUSHER_ERRORS)) {
      expect(reconnectAfterClose(spec.code)).toBe(spec.reconnect);
      expect(Buffer.byteLength(spec.message)).toBeLessThanOrEqual(123);
    }
  });
});

describe('cache channels', () => {
  it("are the same channels for the protocol and for core's history retention", () => {
    const names = [
      'cache-a',
      'private-cache-a',
      'presence-cache-a',
      'private-encrypted-cache-a',
      'private-encrypted-a',
      'presence-a',
      'a-cache-b',
      'cache',
      'private-cachex',
      '#server-to-user-cache-a',
    ];
    for (const name of names)
      expect([name, isPusherCacheTopic({ protocol: 'pusher', channel: name })]).toEqual([
        name,
        classifyChannel(name).cache,
      ]);
    expect(isPusherCacheTopic({ protocol: 'v4', channel: 'cache-a' })).toBe(false);
  });
});
