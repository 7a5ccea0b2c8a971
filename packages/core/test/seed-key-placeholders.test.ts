import { ConfigError, loadConfig } from '../src';

const problems = (
  seeds: Array<{ key: string; secret: string }>,
  env: Record<string, string> = {},
): string[] => {
  try {
    loadConfig({ SWITCHBOARD_KEYS: JSON.stringify(seeds), ...env });
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems;
  }
};

describe('SWITCHBOARD_KEYS placeholders', () => {
  it.each([
    [
      { key: 'CHANGE-ME-key', secret: 'CHANGE-ME-secret-at-least-8-chars' },
      /key "CHANGE-ME-key" has a placeholder name/,
    ],
    [{ key: 'prod', secret: 'changeme-please' }, /key "prod" has a placeholder secret/],
    [{ key: 'prod', secret: 'x-Change-Me' }, /key "prod" has a placeholder secret/],
    [{ key: 'my-key', secret: 'a-long-random-secret' }, /key "my-key" has a placeholder secret/],
    [
      { key: 'dev-key', secret: 'dev-secret-change-me' },
      /key "dev-key" is the public development key of \.env/,
    ],
  ])('%j is refused with one line saying what to do, never the secret', (seed, message) => {
    const found = problems([{ key: 'fine', secret: 'a-real-secret-0123' }, seed]);
    expect(found).toEqual([expect.stringMatching(/^SWITCHBOARD_KEYS\.1: /)]);
    expect(found[0]).toMatch(message);
    expect(found[0]).not.toContain(seed.secret);
  });

  it('allows the development key only with SWITCHBOARD_ALLOW_DEV_KEYS=1, and never a placeholder', () => {
    const dev = { key: 'dev-key', secret: 'dev-secret-change-me' };
    expect(problems([dev], { SWITCHBOARD_ALLOW_DEV_KEYS: '1' })).toEqual([]);
    expect(
      problems([{ key: 'CHANGE-ME-key', secret: 'some-real-secret' }], { SWITCHBOARD_ALLOW_DEV_KEYS: '1' }),
    ).toHaveLength(1);
    expect(problems([dev], { SWITCHBOARD_ALLOW_DEV_KEYS: 'yes' })).toEqual([
      'SWITCHBOARD_ALLOW_DEV_KEYS: must be 1 or 0',
    ]);
  });

  it('does not mistake words that contain the letters for a placeholder', () => {
    expect(problems([{ key: 'exchange-mesh', secret: 'interchangemetal-0123' }])).toEqual([]);
  });
});
