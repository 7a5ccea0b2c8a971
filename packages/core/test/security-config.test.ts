import { AuthFailureLimiter } from '../src/auth/auth-failures';
import { ConfigError, loadConfig } from '../src/config/load';
import { AppError } from '../src/errors';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

const refusal = (run: () => void): AppError | undefined => {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  return undefined;
};

describe('failed-authentication limiter', () => {
  const limits = { perAddress: 3, windowMs: 60_000 };

  it('refuses an address once it failed perAddress times, until its window ends', () => {
    const limiter = new AuthFailureLimiter(limits);
    for (let i = 0; i < 3; i++) {
      expect(refusal(() => limiter.check('192.0.2.1', 1000))).toBeUndefined();
      limiter.failed('192.0.2.1', 1000);
    }
    const error = refusal(() => limiter.check('192.0.2.1', 31_000));
    expect(error?.code).toBe('SB_AUTH_RATE_LIMITED');
    expect(error?.message).toBe(
      'Too many failed authentications from this address; requests are refused for 30 s',
    );
    expect(error?.retryAfterSeconds).toBe(30);
    expect(refusal(() => limiter.check('192.0.2.1', 61_000))).toBeUndefined();
  });

  it('never refuses an address for failures of others, however many', () => {
    const limiter = new AuthFailureLimiter(limits);
    for (let i = 0; i < 1000; i++) limiter.failed(`198.51.100.${i % 250}`, 1000 + i);
    expect(refusal(() => limiter.check('192.0.2.1', 2000))).toBeUndefined();
    expect(refusal(() => limiter.check(undefined, 2000))).toBeUndefined();
  });

  it('is off with perAddress 0', () => {
    const limiter = new AuthFailureLimiter({ perAddress: 0, windowMs: 60_000 });
    for (let i = 0; i < 10; i++) limiter.failed('192.0.2.1');
    expect(limiter.tracking).toBe(false);
    expect(refusal(() => limiter.check('192.0.2.1'))).toBeUndefined();
  });
});

describe('security configuration', () => {
  it('refuses the removed AUTH_FAILURES_PER_KEY with a start-up error naming the replacement', () => {
    for (const value of ['20', '0']) {
      expect(problems({ AUTH_FAILURES_PER_KEY: value })).toEqual([
        'AUTH_FAILURES_PER_KEY: was removed: failed authentications are limited per client address only (AUTH_FAILURES_PER_ADDRESS), because API keys are public and a limit per key let anyone lock its owner out; unset AUTH_FAILURES_PER_KEY',
      ]);
    }
    expect(loadConfig({ AUTH_FAILURES_PER_ADDRESS: '5' }).limits.authFailures).toEqual({
      perAddress: 5,
      windowMs: 60_000,
    });
  });

  it('refuses a seed key whose secret is longer than 256 characters', () => {
    const seed = (secret: string) => JSON.stringify([{ key: 'k', secret }]);
    expect(problems({ SWITCHBOARD_KEYS: seed('s'.repeat(256)) })).toEqual([]);
    expect(problems({ SWITCHBOARD_KEYS: seed('s'.repeat(257)) })).toEqual([
      'SWITCHBOARD_KEYS.0.secret: secret must be at most 256 characters',
    ]);
  });

  it('JWT_REQUIRE_EXP is off by default and takes 1/0/true/false', () => {
    expect(loadConfig({}).jwtRequireExp).toBe(false);
    expect(loadConfig({ JWT_REQUIRE_EXP: '1' }).jwtRequireExp).toBe(true);
    expect(loadConfig({ JWT_REQUIRE_EXP: 'false' }).jwtRequireExp).toBe(false);
    expect(problems({ JWT_REQUIRE_EXP: 'yes' })).toEqual(['JWT_REQUIRE_EXP: must be 1 or 0']);
  });

  it('METRICS_HOST defaults to HOST', () => {
    expect(loadConfig({}).metricsHost).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '10.1.2.3' }).metricsHost).toBe('10.1.2.3');
    expect(loadConfig({ HOST: '0.0.0.0', METRICS_HOST: '127.0.0.1' })).toMatchObject({
      host: '0.0.0.0',
      metricsHost: '127.0.0.1',
    });
  });
});
