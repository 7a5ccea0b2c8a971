import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PRESENCE_TOPIC_SUFFIXES, redisKeys } from '../src/redis/keys';
import type { RedisKeys } from '../src/redis/keys';

const keys = redisKeys('<prefix>');
const topic = { key: '<key>', protocol: '<protocol>', channel: '<channel>' } as never;
const topicBase = keys.presenceTopic(topic);

/** Every name keys.ts builds, pinned; `null` marks helpers that only build prefixes of these. */
const NAMES: Record<Exclude<keyof RedisKeys, 'prefix'>, string | null> = {
  presenceTopic: null,
  presenceTopicKeys: null,
  presenceChannels: '<prefix>:presence:{<key>}:channel-names',
  presenceByNode: '<prefix>:presence:{<key>}:by-node',
  presenceNodeKeys: '<prefix>:presence-node:{<nodeId>}',
  countsChannels: '<prefix>:counts:{<key>}:channels',
  countsTotal: '<prefix>:counts:{<key>}:total',
  countsNode: '<prefix>:counts:{<key>}:node:<nodeId>',
  countsSockets: '<prefix>:counts:{<key>}:sockets',
  countsSocketsTotal: '<prefix>:counts:{<key>}:sockets-total',
  countsNodeKeys: '<prefix>:counts-node:{<nodeId>}',
  quotaApiRequests: '<prefix>:quota:{<key>}:api-requests',
  quotaPublishes: '<prefix>:quota:{<key>}:publishes',
  quotaMessagesDay: '<prefix>:quota:{<key>}:day:<day>',
  log: '<prefix>:log:{<key>}',
  apiKey: '<prefix>:apikey:{keystore}:<key>',
  apiKeyIndex: '<prefix>:apikeys:{keystore}',
  apiKeyWebhookIndex: '<prefix>:apikeys-webhook:{keystore}',
  nodes: '<prefix>:nodes',
  fanout: '<prefix>:fanout:{<key>|<protocol>|<channel>}',
  historyStream: '<prefix>:history:{<key>|<protocol>|<channel>}:stream',
  historyMeta: '<prefix>:history:{<key>|<protocol>|<channel>}:meta:<generation>',
  control: '<prefix>:control',
  replies: '<prefix>:replies:{<nodeId>}',
  webhookSwitch: '<prefix>:webhook:{<key>}:on',
  webhookEvents: '<prefix>:webhook:{<key>}:events',
  webhookLease: '<prefix>:webhook:{<key>}:lease',
  webhookBytes: '<prefix>:webhook:{<key>}:bytes',
};

const built: Record<Exclude<keyof RedisKeys, 'prefix'>, string> = {
  presenceTopic: topicBase,
  presenceTopicKeys: keys.presenceTopicKeys(topic).join(' '),
  presenceChannels: keys.presenceChannels('<key>'),
  presenceByNode: keys.presenceByNode('<key>'),
  presenceNodeKeys: keys.presenceNodeKeys('<nodeId>'),
  countsChannels: keys.countsChannels('<key>'),
  countsTotal: keys.countsTotal('<key>'),
  countsNode: keys.countsNode('<key>', '<nodeId>'),
  countsSockets: keys.countsSockets('<key>'),
  countsSocketsTotal: keys.countsSocketsTotal('<key>'),
  countsNodeKeys: keys.countsNodeKeys('<nodeId>'),
  quotaApiRequests: keys.quotaApiRequests('<key>'),
  quotaPublishes: keys.quotaPublishes('<key>'),
  quotaMessagesDay: keys.quotaMessagesDay('<key>', '<day>'),
  log: keys.log('<key>'),
  apiKey: keys.apiKey('<key>'),
  apiKeyIndex: keys.apiKeyIndex(),
  apiKeyWebhookIndex: keys.apiKeyWebhookIndex(),
  nodes: keys.nodes(),
  fanout: keys.fanout(topic),
  historyStream: keys.historyStream(topic),
  historyMeta: keys.historyMeta(topic, '<generation>'),
  control: keys.control(),
  replies: keys.replies('<nodeId>'),
  webhookSwitch: keys.webhookSwitch('<key>'),
  webhookEvents: keys.webhookEvents('<key>'),
  webhookLease: keys.webhookLease('<key>'),
  webhookBytes: keys.webhookBytes('<key>'),
};

/** The full set of key and channel patterns, including the per-topic keys the scripts derive. */
const patterns = (): string[] => [
  ...Object.values(NAMES).filter((n): n is string => n !== null),
  keys.presenceChannels('<key>', '<protocol>' as never),
  ...keys.presenceTopicKeys(topic),
  keys.countsChannels('<key>', 'pusher'),
  keys.countsTotal('<key>', 'pusher'),
  keys.countsNode('<key>', '<nodeId>', 'pusher'),
];

/** First cell of every table row whose first cell is code: the documented patterns. */
function documented(): string[] {
  const doc = readFileSync(join(__dirname, '../../../docs/redis-keys.md'), 'utf8');
  return doc
    .split('\n')
    .map((line) => /^\| `([^`]+)` +\|/.exec(line)?.[1])
    .filter((cell): cell is string => cell !== undefined)
    .map((cell) => cell.replace(/\\\|/g, '|'));
}

describe('Redis key names', () => {
  it('are the pinned strings', () => {
    expect(Object.keys(built).sort()).toEqual(Object.keys(NAMES).sort());
    expect(Object.keys(keys).sort()).toEqual(['prefix', ...Object.keys(NAMES)].sort());
    for (const [method, name] of Object.entries(NAMES)) {
      if (name !== null) expect(built[method as keyof typeof built]).toBe(name);
    }
    expect(topicBase).toBe('<prefix>:presence:{<key>}:topic:<protocol>|<channel>');
    // The PieSocket family keeps the names of earlier versions; Pusher's counts are marked.
    expect(keys.countsChannels('<key>', 'piesocket')).toBe(built.countsChannels);
    expect(keys.countsNode('<key>', '<nodeId>', 'pusher')).toBe(
      '<prefix>:counts:{<key>}:pusher:node:<nodeId>',
    );
    expect(keys.presenceTopicKeys(topic)).toEqual(
      Object.values(PRESENCE_TOPIC_SUFFIXES).map((suffix) => `${topicBase}${suffix}`),
    );
  });

  it('agree with docs/redis-keys.md, both ways', () => {
    expect(documented().sort()).toEqual(patterns().sort());
  });

  it('keep every multi-key operation of an API key in one hash slot', () => {
    const tag = (name: string): string | undefined => /\{([^}]*)\}/.exec(name)?.[1];
    const perKey = [
      ...keys.presenceTopicKeys(topic),
      built.presenceChannels,
      keys.presenceChannels('<key>', 'v3'),
      built.presenceByNode,
      built.countsSockets,
      built.countsSocketsTotal,
      built.countsChannels,
      built.countsTotal,
      built.countsNode,
      keys.countsChannels('<key>', 'pusher'),
      keys.countsTotal('<key>', 'pusher'),
      keys.countsNode('<key>', '<nodeId>', 'pusher'),
      built.webhookSwitch,
      built.webhookEvents,
      built.webhookBytes,
    ];
    expect(new Set(perKey.map(tag))).toEqual(new Set(['<key>']));
    expect(tag(built.fanout)).toBe('<key>|<protocol>|<channel>');
    // One script stores, counts and publishes a topic's publication: all in the channel's slot.
    expect(tag(built.historyStream)).toBe(tag(built.fanout));
    expect(tag(built.historyMeta)).toBe(tag(built.fanout));
    expect(tag(built.apiKey)).toBe(tag(built.apiKeyIndex));
    expect(tag(built.apiKeyWebhookIndex)).toBe(tag(built.apiKeyIndex));
  });

  it('refuse names that would break a hash tag or a separator', () => {
    expect(() => redisKeys('sb{x}')).toThrow(/REDIS_PREFIX/);
    expect(() => keys.log('a}b')).toThrow(/API key/);
    expect(() => keys.fanout({ key: 'k', protocol: 'v4', channel: 'a|b' })).toThrow(/channel/);
    expect(() => keys.countsNode('k', '')).toThrow(/node id/);
  });

  it("name each topic's stream keys after that topic, built in any order", () => {
    const a = { key: 'ka', protocol: 'v3' as const, channel: 'one' };
    const b = { key: 'kb', protocol: 'v4' as const, channel: 'two' };
    const names = [
      keys.historyMeta(a, 'g1'),
      keys.fanout(b),
      keys.historyStream(a),
      keys.historyMeta(b, 'g1'),
      keys.fanout(a),
    ];
    expect(names).toEqual([
      '<prefix>:history:{ka|v3|one}:meta:g1',
      '<prefix>:fanout:{kb|v4|two}',
      '<prefix>:history:{ka|v3|one}:stream',
      '<prefix>:history:{kb|v4|two}:meta:g1',
      '<prefix>:fanout:{ka|v3|one}',
    ]);
    // An equal topic in another object names the same keys.
    expect(keys.fanout({ ...a })).toBe(keys.fanout(a));
  });

  it('name runs of one topic and topics that differ in one field alike (the last names are kept)', () => {
    const base = { key: 'k1', protocol: 'pusher' as const, channel: 'c' };
    expect(keys.fanout(base)).toBe('<prefix>:fanout:{k1|pusher|c}');
    expect(keys.historyStream({ ...base })).toBe('<prefix>:history:{k1|pusher|c}:stream');
    expect(keys.fanout({ ...base, key: 'k2' })).toBe('<prefix>:fanout:{k2|pusher|c}');
    expect(keys.fanout({ ...base, protocol: 'v3' })).toBe('<prefix>:fanout:{k1|v3|c}');
    expect(keys.historyStream({ ...base, channel: 'd' })).toBe('<prefix>:history:{k1|pusher|d}:stream');
    expect(keys.fanout({ ...base, channel: 'd' })).toBe('<prefix>:fanout:{k1|pusher|d}');
    // A refused topic leaves the kept names as they were.
    expect(() => keys.fanout({ ...base, channel: 'x|y' })).toThrow(/channel/);
    expect(keys.historyStream({ ...base, channel: 'd' })).toBe('<prefix>:history:{k1|pusher|d}:stream');
    expect(keys.log('k1')).toBe('<prefix>:log:{k1}');
    expect(() => keys.log('k{')).toThrow(/API key/);
    expect(keys.log('k2')).toBe('<prefix>:log:{k2}');
    expect(keys.log('k1')).toBe('<prefix>:log:{k1}');
  });
});
