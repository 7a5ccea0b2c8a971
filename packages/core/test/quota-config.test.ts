import { ConfigError, loadConfig } from '../src/config/load';
import { keyLimits } from '../src/quotas/quotas';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('quota configuration', () => {
  it('takes a key’s limits from SWITCHBOARD_KEYS and falls back to the defaults per field', () => {
    const config = loadConfig({
      SWITCHBOARD_KEYS: JSON.stringify([
        { key: 'tenant', secret: 'a-secret-of-mine', limits: { connections: 10, messagesPerDay: 0 } },
      ]),
      MAX_CONNECTIONS_PER_KEY: '100',
      API_REQUESTS_PER_SECOND: '50',
      PUBLISHES_PER_SECOND_PER_KEY: '20',
      MESSAGES_PER_DAY_PER_KEY: '1000',
    });
    const record = config.seedKeys[0]!;
    expect(record.limits).toEqual({ connections: 10, messagesPerDay: 0 });
    expect(keyLimits(record, config)).toEqual({
      connections: 10,
      apiRequestsPerSecond: 50,
      publishesPerSecond: 20,
      messagesPerDay: 0,
    });
    expect(keyLimits({}, config)).toEqual({
      connections: 100,
      apiRequestsPerSecond: 50,
      publishesPerSecond: 20,
      messagesPerDay: 1000,
    });
  });

  it('refuses unknown or negative limit fields', () => {
    const seed = (limits: unknown) =>
      problems({ SWITCHBOARD_KEYS: JSON.stringify([{ key: 'k', secret: 'a-secret-of-mine', limits }]) });
    expect(seed({ connection: 1 })[0]).toMatch(/^SWITCHBOARD_KEYS\.0\.limits: Unrecognized key/);
    expect(seed({ messagesPerDay: -1 })[0]).toMatch(/^SWITCHBOARD_KEYS\.0\.limits\.messagesPerDay: /);
  });

  it('takes TRUSTED_PROXIES as addresses and CIDR blocks, and refuses the old TRUST_PROXY', () => {
    expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.4,::1,fd00::/8' }).trustedProxies).toEqual([
      '10.0.0.0/8',
      '192.168.1.4',
      '::1',
      'fd00::/8',
    ]);
    expect(problems({ TRUSTED_PROXIES: 'haproxy' })).toEqual([
      'TRUSTED_PROXIES: "haproxy" is not an IP address or CIDR block',
    ]);
    expect(problems({ TRUSTED_PROXIES: '10.0.0.0/33' })).toEqual([
      'TRUSTED_PROXIES: "10.0.0.0/33" is not an IP address or CIDR block',
    ]);
    expect(problems({ TRUST_PROXY: '1' })).toEqual([
      'TRUST_PROXY: was replaced by TRUSTED_PROXIES: list the addresses of the proxies in front (e.g. TRUSTED_PROXIES=10.0.0.0/8)',
    ]);
  });
});
