import { ConfigError, loadConfig } from '../src/config/load';
import { webhookEvents } from '../src/webhooks/webhooks';

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

  it('takes cache_miss as an event, which the default set leaves out as it does client_event', () => {
    const config = loadConfig(
      {},
      { SWITCHBOARD_KEYS: seeded({ url: 'https://b.example/h', events: ['cache_miss', 'member_added'] }) },
    );
    expect(config.seedKeys[0]?.webhook?.events).toEqual(['cache_miss', 'member_added']);
    expect(webhookEvents({ url: 'https://b.example/h' })).toEqual([
      'channel_occupied',
      'channel_vacated',
      'member_added',
      'member_removed',
    ]);
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

  it('with WEBHOOK_DENY_PRIVATE, refuses a seeded webhook on a private address or localhost, naming it', () => {
    for (const url of [
      'http://127.0.0.1:9000/h',
      'http://localhost/h',
      'http://[fe80::1]/h',
      'http://172.20.0.5/h',
    ]) {
      expect(problems({ SWITCHBOARD_KEYS: seeded({ url }) })).toEqual([]);
      expect(problems({ WEBHOOK_DENY_PRIVATE: '1', SWITCHBOARD_KEYS: seeded({ url }) })).toEqual([
        `SWITCHBOARD_KEYS.0.webhook.url: webhook URL ${url} points at a loopback, link-local or private address, which WEBHOOK_DENY_PRIVATE refuses`,
      ]);
    }
    expect(
      problems({ WEBHOOK_DENY_PRIVATE: '1', SWITCHBOARD_KEYS: seeded({ url: 'https://8.8.8.8/h' }) }),
    ).toEqual([]);
    expect(loadConfig({}, {}).webhooks.denyPrivate).toBe(false);
    expect(loadConfig({}, { WEBHOOK_DENY_PRIVATE: 'true' }).webhooks.denyPrivate).toBe(true);
    expect(problems({ WEBHOOK_DENY_PRIVATE: 'yes' })).toEqual(['WEBHOOK_DENY_PRIVATE: must be 1 or 0']);
  });

  it('bounds each key queue by WEBHOOK_QUEUE_MAX_EVENTS (10000) and WEBHOOK_QUEUE_MAX_BYTES (16 MiB)', () => {
    expect(loadConfig({}, {}).webhooks).toMatchObject({
      queueMaxEvents: 10_000,
      queueMaxBytes: 16 * 1024 * 1024,
    });
    expect(
      loadConfig({}, { WEBHOOK_QUEUE_MAX_EVENTS: '50', WEBHOOK_QUEUE_MAX_BYTES: '4096' }).webhooks,
    ).toMatchObject({ queueMaxEvents: 50, queueMaxBytes: 4096 });
    expect(problems({ WEBHOOK_QUEUE_MAX_EVENTS: '0' })).toEqual([
      expect.stringMatching(/^WEBHOOK_QUEUE_MAX_EVENTS: /),
    ]);
    expect(problems({ WEBHOOK_QUEUE_MAX_EVENTS: '100001' })).toEqual([
      expect.stringMatching(/^WEBHOOK_QUEUE_MAX_EVENTS: /),
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
