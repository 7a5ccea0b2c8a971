import { ConfigError, historyRetention, loadConfig, MAX_HISTORY_SIZE } from '../src';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({}, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('history retention configuration', () => {
  it('keeps the last 100 publications, at most 1 MiB of them, for 120 s by default', () => {
    expect(loadConfig({}).history).toEqual({ size: 100, ttlSeconds: 120, maxBytes: 1024 * 1024 });
  });

  it('reads HISTORY_MAX_BYTES_PER_CHANNEL and refuses values out of range', () => {
    expect(loadConfig({}, { HISTORY_MAX_BYTES_PER_CHANNEL: '65536' }).history.maxBytes).toBe(65536);
    for (const bad of ['0', '1023', '1.5', 'lots', String(2 ** 31)]) {
      const found = problems({ HISTORY_MAX_BYTES_PER_CHANNEL: bad });
      expect(found.length).toBeGreaterThan(0);
      for (const problem of found) expect(problem).toMatch(/^HISTORY_MAX_BYTES_PER_CHANNEL: /);
    }
  });

  it('reads HISTORY_SIZE (0 turns history off) and HISTORY_TTL_SECONDS', () => {
    expect(loadConfig({}, { HISTORY_SIZE: '0', HISTORY_TTL_SECONDS: '5' }).history).toMatchObject({
      size: 0,
      ttlSeconds: 5,
    });
    expect(loadConfig({}, { HISTORY_SIZE: String(MAX_HISTORY_SIZE) }).history.size).toBe(MAX_HISTORY_SIZE);
  });

  it('refuses sizes out of range and TTLs that are not positive whole seconds, one line each', () => {
    expect(problems({ HISTORY_SIZE: '-1' })).toEqual([expect.stringMatching(/^HISTORY_SIZE: /)]);
    expect(problems({ HISTORY_SIZE: String(MAX_HISTORY_SIZE + 1) })).toEqual([
      expect.stringMatching(/^HISTORY_SIZE: .*10000/),
    ]);
    expect(problems({ HISTORY_SIZE: 'many', HISTORY_TTL_SECONDS: '0' })).toEqual([
      expect.stringMatching(/^HISTORY_SIZE: /),
      expect.stringMatching(/^HISTORY_TTL_SECONDS: /),
    ]);
    expect(problems({ HISTORY_TTL_SECONDS: '1.5' })).toEqual([
      expect.stringMatching(/^HISTORY_TTL_SECONDS: /),
    ]);
  });

  it('takes a per-key override from SWITCHBOARD_KEYS and refuses a malformed one', () => {
    const seeded = (history: unknown) =>
      JSON.stringify([{ key: 'k1', secret: 'long-enough', ...(history === undefined ? {} : { history }) }]);
    expect(loadConfig({}, { SWITCHBOARD_KEYS: seeded({ size: 0 }) }).seedKeys[0]?.history).toEqual({
      size: 0,
    });
    expect(loadConfig({}, { SWITCHBOARD_KEYS: seeded(undefined) }).seedKeys[0]).not.toHaveProperty('history');
    expect(problems({ SWITCHBOARD_KEYS: seeded({ size: -3 }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.history\.size: /),
    ]);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ ttl: 5 }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.history: .*ttl/),
    ]);
  });
});

describe('historyRetention', () => {
  const config = loadConfig({}, { HISTORY_SIZE: '50', HISTORY_TTL_SECONDS: '60' });

  it("is the configuration's retention for a key without an override", () => {
    expect(historyRetention({}, config)).toBe(config.history);
  });

  it("takes each field the key overrides, and the configuration's for the others", () => {
    const maxBytes = config.history.maxBytes;
    expect(historyRetention({ history: { size: 0 } }, config)).toEqual({ size: 0, ttlSeconds: 60, maxBytes });
    expect(historyRetention({ history: { ttlSeconds: 7 } }, config)).toEqual({
      size: 50,
      ttlSeconds: 7,
      maxBytes,
    });
    expect(historyRetention({ history: { size: 3, ttlSeconds: 9 } }, config)).toEqual({
      size: 3,
      ttlSeconds: 9,
      maxBytes,
    });
  });
});
