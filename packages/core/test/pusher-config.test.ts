import { ConfigError, loadConfig } from '../src/config/load';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

const seeded = (entry: Record<string, unknown>): string =>
  JSON.stringify([{ key: 'tenant', secret: 'a-secret-of-mine', ...entry }]);

describe('Pusher configuration', () => {
  it("defaults to Pusher's own limits", () => {
    expect(loadConfig({}).pusher).toEqual({
      maxPresenceMembers: 100,
      clientEventsPerSecond: 10,
      activityTimeoutSeconds: 120,
      pongTimeoutSeconds: 30,
      cacheTtlSeconds: 1800,
      identity: {
        maxChannelDataBytes: 2048,
        maxUserInfoBytes: 1024,
        maxUserDataBytes: 16384,
        maxWatchlistSize: 100,
      },
    });
  });

  it('takes every PUSHER_ variable, channel_data following user_info', () => {
    const config = loadConfig({
      PUSHER_MAX_PRESENCE_MEMBERS: '500',
      PUSHER_CLIENT_EVENTS_PER_SECOND: '20',
      PUSHER_ACTIVITY_TIMEOUT_SECONDS: '60',
      PUSHER_PONG_TIMEOUT_SECONDS: '10',
      PUSHER_MAX_USER_INFO_BYTES: '4096',
      PUSHER_MAX_USER_DATA_BYTES: '32768',
      PUSHER_MAX_WATCHLIST_SIZE: '250',
      PUSHER_CACHE_TTL_SECONDS: '600',
    });
    expect(config.pusher).toEqual({
      maxPresenceMembers: 500,
      clientEventsPerSecond: 20,
      activityTimeoutSeconds: 60,
      pongTimeoutSeconds: 10,
      cacheTtlSeconds: 600,
      identity: {
        maxChannelDataBytes: 5120,
        maxUserInfoBytes: 4096,
        maxUserDataBytes: 32768,
        maxWatchlistSize: 250,
      },
    });
  });

  it('refuses values out of bounds, naming the variable', () => {
    expect(
      problems({
        PUSHER_MAX_PRESENCE_MEMBERS: '0',
        PUSHER_CLIENT_EVENTS_PER_SECOND: 'ten',
        PUSHER_ACTIVITY_TIMEOUT_SECONDS: '4',
        PUSHER_PONG_TIMEOUT_SECONDS: '121',
        PUSHER_MAX_USER_INFO_BYTES: '16385',
        PUSHER_MAX_USER_DATA_BYTES: '65537',
        PUSHER_MAX_WATCHLIST_SIZE: '1001',
        PUSHER_CACHE_TTL_SECONDS: '0',
      }).map((problem) => problem.split(':')[0]),
    ).toEqual([
      'PUSHER_MAX_PRESENCE_MEMBERS',
      'PUSHER_CLIENT_EVENTS_PER_SECOND',
      'PUSHER_ACTIVITY_TIMEOUT_SECONDS',
      'PUSHER_PONG_TIMEOUT_SECONDS',
      'PUSHER_MAX_USER_INFO_BYTES',
      'PUSHER_MAX_USER_DATA_BYTES',
      'PUSHER_MAX_WATCHLIST_SIZE',
      'PUSHER_CACHE_TTL_SECONDS',
    ]);
    expect(problems({ PUSHER_MAX_PRESENCE_MEMBERS: '10001' })).toEqual([
      expect.stringMatching(/^PUSHER_MAX_PRESENCE_MEMBERS: .*10000/),
    ]);
  });

  it('takes an appId from SWITCHBOARD_KEYS, absent when not given', () => {
    const config = loadConfig({
      SWITCHBOARD_KEYS: JSON.stringify([
        { key: 'tenant', secret: 'a-secret-of-mine', appId: '1234567' },
        { key: 'other', secret: 'a-secret-of-mine' },
      ]),
    });
    expect(config.seedKeys[0]?.appId).toBe('1234567');
    expect(config.seedKeys[1]).not.toHaveProperty('appId');
  });

  it('refuses an appId that is not a URL-safe token of 1 to 128 characters', () => {
    for (const appId of ['', 'a/b', 'my app', 'x'.repeat(129), 42]) {
      expect(problems({ SWITCHBOARD_KEYS: seeded({ appId }) })).toEqual([
        expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.appId: /),
      ]);
    }
    expect(problems({ SWITCHBOARD_KEYS: seeded({ appId: 'a/b' }) })).toEqual([
      'SWITCHBOARD_KEYS.0.appId: appId must be 1 to 128 characters of A-Z a-z 0-9 _ -',
    ]);
  });

  it('takes subscriptionCount from SWITCHBOARD_KEYS, off by default, and refuses a non-boolean', () => {
    const config = loadConfig({
      SWITCHBOARD_KEYS: JSON.stringify([
        { key: 'tenant', secret: 'a-secret-of-mine', subscriptionCount: true },
        { key: 'other', secret: 'a-secret-of-mine' },
      ]),
    });
    expect(config.seedKeys[0]?.subscriptionCount).toBe(true);
    expect(config.seedKeys[1]?.subscriptionCount).toBe(false);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ subscriptionCount: 'yes' }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.subscriptionCount: /),
    ]);
  });
});
