import { ConfigError, loadConfig } from '../src/config/load';

function problems(overrides: Record<string, string>): string[] {
  try {
    loadConfig({}, overrides);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

const seeded = (webhook: unknown): string => JSON.stringify([{ key: 'k1', secret: 'long-enough', webhook }]);

describe('webhook configuration', () => {
  it('takes a webhook from SWITCHBOARD_KEYS, events deduplicated', () => {
    const config = loadConfig(
      {},
      { SWITCHBOARD_KEYS: seeded({ url: 'https://b.example/h', events: ['member_added', 'member_added'] }) },
    );
    expect(config.seedKeys[0]?.webhook).toEqual({ url: 'https://b.example/h', events: ['member_added'] });
  });

  it('refuses a URL that is not http(s), an unknown event, an empty list and unknown fields', () => {
    expect(problems({ SWITCHBOARD_KEYS: seeded({ url: 'ftp://b.example/h' }) })).toEqual([
      'SWITCHBOARD_KEYS.0.webhook.url: url must be an http:// or https:// URL',
    ]);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ url: 'not a url' }) })).toEqual([
      'SWITCHBOARD_KEYS.0.webhook.url: url must be an http:// or https:// URL',
    ]);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ url: 'http://b', events: ['channel_full'] }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.webhook\.events\.0: .*channel_occupied/),
    ]);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ url: 'http://b', events: [] }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.webhook\.events: .*at least one/),
    ]);
    expect(problems({ SWITCHBOARD_KEYS: seeded({ url: 'http://b', secret: 'x' }) })).toEqual([
      expect.stringMatching(/^SWITCHBOARD_KEYS\.0\.webhook: .*secret/),
    ]);
  });

  it('retries for WEBHOOK_RETRY_SECONDS, 300 by default, and refuses a non-positive one', () => {
    expect(loadConfig({}).webhooks.retrySeconds).toBe(300);
    expect(loadConfig({}, { WEBHOOK_RETRY_SECONDS: '30' }).webhooks.retrySeconds).toBe(30);
    expect(problems({ WEBHOOK_RETRY_SECONDS: '0' })).toEqual([
      expect.stringMatching(/^WEBHOOK_RETRY_SECONDS: /),
    ]);
  });
});
