import type { ConfigError } from '../src/config/load';
import { loadConfig } from '../src/config/load';

describe('Sentinel configuration', () => {
  it('reads the sentinels, the master name, the passwords and TLS', () => {
    const config = loadConfig({
      REDIS_SENTINELS: 's1:26379, s2:26380',
      REDIS_SENTINEL_NAME: 'main',
      REDIS_SENTINEL_PASSWORD: 'sp',
      REDIS_PASSWORD: 'rp',
      REDIS_SENTINEL_TLS: '1',
    });
    expect(config.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      name: 'main',
      sentinelPassword: 'sp',
      password: 'rp',
      tls: true,
    });
    expect(loadConfig({ REDIS_SENTINELS: 's1:26379' }).redis).toMatchObject({ name: 'mymaster', tls: false });
  });

  it('refuses a sentinel list beside REDIS_URL or REDIS_CLUSTER_NODES, and a malformed one', () => {
    const problems = (env: Record<string, string>): string[] => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems({ REDIS_SENTINELS: 's1:26379', REDIS_URL: 'redis://r:6379' })).toEqual([
      'REDIS_SENTINELS: set one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS',
    ]);
    expect(problems({ REDIS_SENTINELS: 's1:26379', REDIS_CLUSTER_NODES: 'c1:7000' })).toEqual([
      'REDIS_SENTINELS: set one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS',
    ]);
    expect(problems({ REDIS_SENTINELS: 's1' })).toEqual(['REDIS_SENTINELS: "s1" is not host:port']);
  });
});
