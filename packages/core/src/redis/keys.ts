import type { ApiKey, NodeId, Protocol, Topic } from '../types';
import type { CountFamily } from '../config/families';

/**
 * The one module that names Redis keys and pub/sub channels. `docs/redis-keys.md` lists every
 * pattern and a test keeps both in agreement.
 *
 * Hash tags (`{…}`) decide the Redis Cluster slot:
 * - presence, counts and webhook events of one API key share the tag `{<apiKey>}`, so every multi-key update of a
 *   key (a join touching the topic's sets, the key's channel indexes and its node index) is one
 *   atomic Lua script in one slot. Scripts receive every key they touch in KEYS; none builds a
 *   key name itself;
 * - fan-out channels are tagged per topic, so sharded pub/sub spreads channels over the masters;
 *   a topic's history keys share its channel's tag, so one script stores, counts and publishes;
 * - per-node indexes are tagged `{<nodeId>}`, the key store `{keystore}`.
 * The prefix, API keys, node ids and channel names cannot contain braces or `|` (config and
 * protocol validation), so tags and separators are unambiguous.
 */
export interface RedisKeys {
  readonly prefix: string;
  /** Base of one topic's presence keys: `presenceTopicKeys` appends the suffixes to it. */
  presenceTopic(topic: Topic): string;
  /** One topic's presence keys, in `PRESENCE_TOPIC_SUFFIXES` order (scripts take them in KEYS). */
  presenceTopicKeys(topic: Topic): string[];
  /**
   * ZSET, every score 0 (lexicographic order): the channel names of an API key with presence
   * entries of `protocol`, or of either protocol when none is given.
   */
  presenceChannels(key: ApiKey, protocol?: Protocol): string;
  /** ZSET, every score 0: `<nodeId>|<protocol>|<channel>|<connId>` of each entry of an API key. */
  presenceByNode(key: ApiKey): string;
  /** SET of API keys in which a node holds presence entries. */
  presenceNodeKeys(nodeId: NodeId): string;
  /**
   * ZSET channel → −count, per API key and count family. The PieSocket family's names are the
   * original, unmarked ones (`counts:{<key>}:channels`); Pusher's carry `:pusher` after the tag.
   */
  countsChannels(key: ApiKey, family?: CountFamily): string;
  /** STRING: the key's total connection count in one count family. */
  countsTotal(key: ApiKey, family?: CountFamily): string;
  /** HASH channel → count contributed by one node, in one count family. */
  countsNode(key: ApiKey, nodeId: NodeId, family?: CountFamily): string;
  /** HASH nodeId → sockets of the API key that node reserved (the per-key connection limit). */
  countsSockets(key: ApiKey): string;
  /** STRING: sockets of the API key reserved on every node. */
  countsSocketsTotal(key: ApiKey): string;
  /** SET of API keys in which a node holds counts or socket reservations. */
  countsNodeKeys(nodeId: NodeId): string;
  /** STRING: cluster API requests of the API key in the current one-second window (expires with it). */
  quotaApiRequests(key: ApiKey): string;
  /** STRING: publishes of the API key in the current one-second window (expires with it). */
  quotaPublishes(key: ApiKey): string;
  /** STRING: publishes of the API key on one UTC day (`YYYY-MM-DD`), expiring after that day. */
  quotaMessagesDay(key: ApiKey, day: string): string;
  /** LIST of log records (JSON), newest first. */
  log(key: ApiKey): string;
  /** HASH: one API key record. */
  apiKey(key: ApiKey): string;
  /** SET of every API key. */
  apiKeyIndex(): string;
  /** SET of the API keys with a webhook (the dispatchers' list). */
  apiKeyWebhookIndex(): string;
  /** ZSET nodeId → last heartbeat (ms). */
  nodes(): string;
  /** Pub/sub channel of one topic's publications (sharded on Redis Cluster). */
  fanout(topic: Topic): string;
  /** LIST of one topic's last publications (wire form), oldest first; in `fanout`'s slot. */
  historyStream(topic: Topic): string;
  /**
   * HASH `e` → epoch, `o` → latest offset of one topic's stream while the server that holds it
   * has `generation` (connection-health.ts: it changes on a restart or a promotion, so the stream
   * starts a new epoch then); in `fanout`'s slot.
   */
  historyMeta(topic: Topic, generation: string): string;
  /** Pub/sub channel of control commands (every node). */
  control(): string;
  /** Pub/sub channel of the replies to one node's requested control commands (sharded on a cluster). */
  replies(nodeId: NodeId): string;
  /**
   * STRING: the events of the key's webhook, space-separated with a space at each end; absent
   * without a webhook. The counts and presence scripts store events only while it exists.
   */
  webhookSwitch(key: ApiKey): string;
  /** STREAM of the key's webhook events (field `e`: the event as JSON), consumer group `dispatch`. */
  webhookEvents(key: ApiKey): string;
  /** STRING with a PX: the owner of the key's webhook dispatch. */
  webhookLease(key: ApiKey): string;
  /** STRING: bytes of the client events in `webhookEvents` (their `b` fields), for its byte limit. */
  webhookBytes(key: ApiKey): string;
}

const SAFE = /^[^{}|]+$/;

function checked(kind: string, value: string): string {
  if (!SAFE.test(value)) throw new Error(`${kind} must not be empty or contain braces or '|': ${value}`);
  return value;
}

/** `<protocol>|<channel>`: a topic within its API key, as the presence indexes hold it. */
export const topicInKey = (t: Topic): string =>
  `${checked('protocol', t.protocol)}|${checked('channel', t.channel)}`;

export function redisKeys(prefix: string): RedisKeys {
  const p = checked('REDIS_PREFIX', prefix);
  /** `<protocol>|<channel>`: a topic within its API key (presence indexes hold this form). */
  const topicPart = topicInKey;
  const byKey = (kind: string, key: ApiKey): string => `${p}:${kind}:{${checked('API key', key)}}`;
  /** `{<key>|<protocol>|<channel>}`: one topic's slot (its fan-out channel and history). */
  // A publication's keys and channel (meta, stream, fan-out) are built one after the other, and
  // a batch's publications often go to one topic: the last topic's tag and names are kept, found
  // again by value (each publication has its own topic object), so they are checked and built
  // once for a run of publications, and are the same strings each time (hashed once where they
  // are looked up).
  let lastTopic: Topic | undefined;
  let lastTag = '';
  let lastFanout: string | undefined;
  let lastStream: string | undefined;
  const topicTag = (t: Topic): string => {
    const last = lastTopic;
    if (
      t !== last &&
      (last === undefined || t.channel !== last.channel || t.key !== last.key || t.protocol !== last.protocol)
    ) {
      lastTag = `{${checked('API key', t.key)}|${topicPart(t)}}`;
      lastFanout = undefined;
      lastStream = undefined;
    }
    lastTopic = t;
    return lastTag;
  };
  // The message log's key of the last key asked for (every logged publish asks).
  let lastLogKey: ApiKey | undefined;
  let lastLog = '';
  /** The counts of one family: PieSocket's unmarked (the names of every earlier version), Pusher's marked. */
  const byCountFamily = (key: ApiKey, family: CountFamily = 'piesocket'): string =>
    family === 'piesocket' ? byKey('counts', key) : `${byKey('counts', key)}:${family}`;
  const byNode = (kind: string, nodeId: NodeId): string => `${p}:${kind}:{${checked('node id', nodeId)}}`;
  const presenceTopic = (t: Topic): string => `${byKey('presence', t.key)}:topic:${topicPart(t)}`;
  return {
    prefix: p,
    presenceTopic,
    presenceTopicKeys: (t) => {
      const base = presenceTopic(t);
      return TOPIC_SUFFIXES.map((suffix) => `${base}${suffix}`);
    },
    presenceChannels: (key, protocol) =>
      `${byKey('presence', key)}:channel-names${protocol ? `:${checked('protocol', protocol)}` : ''}`,
    presenceByNode: (key) => `${byKey('presence', key)}:by-node`,
    presenceNodeKeys: (nodeId) => byNode('presence-node', nodeId),
    countsChannels: (key, family) => `${byCountFamily(key, family)}:channels`,
    countsTotal: (key, family) => `${byCountFamily(key, family)}:total`,
    countsNode: (key, nodeId, family) => `${byCountFamily(key, family)}:node:${checked('node id', nodeId)}`,
    countsSockets: (key) => `${byKey('counts', key)}:sockets`,
    countsSocketsTotal: (key) => `${byKey('counts', key)}:sockets-total`,
    countsNodeKeys: (nodeId) => byNode('counts-node', nodeId),
    quotaApiRequests: (key) => `${byKey('quota', key)}:api-requests`,
    quotaPublishes: (key) => `${byKey('quota', key)}:publishes`,
    quotaMessagesDay: (key, day) => `${byKey('quota', key)}:day:${checked('day', day)}`,
    log: (key) => {
      if (key !== lastLogKey) {
        lastLog = byKey('log', key);
        lastLogKey = key;
      }
      return lastLog;
    },
    apiKey: (key) => `${p}:apikey:{keystore}:${checked('API key', key)}`,
    apiKeyIndex: () => `${p}:apikeys:{keystore}`,
    apiKeyWebhookIndex: () => `${p}:apikeys-webhook:{keystore}`,
    nodes: () => `${p}:nodes`,
    fanout: (t) => {
      const tag = topicTag(t);
      return (lastFanout ??= `${p}:fanout:${tag}`);
    },
    historyStream: (t) => {
      const tag = topicTag(t);
      return (lastStream ??= `${p}:history:${tag}:stream`);
    },
    historyMeta: (t, generation) => `${p}:history:${topicTag(t)}:meta:${generation}`,
    control: () => `${p}:control`,
    replies: (nodeId) => byNode('replies', nodeId),
    webhookSwitch: (key) => `${byKey('webhook', key)}:on`,
    webhookEvents: (key) => `${byKey('webhook', key)}:events`,
    webhookLease: (key) => `${byKey('webhook', key)}:lease`,
    webhookBytes: (key) => `${byKey('webhook', key)}:bytes`,
  };
}

/** The keys of one topic's presence, `presenceTopic(topic)` + suffix (documented with the keys). */
export const PRESENCE_TOPIC_SUFFIXES = {
  /** HASH connId → entry JSON `{"i":identity,"n":nodeId,"m":member}` */
  conns: ':conns',
  /** ZSET connId → −last active (roster order: most recent first, connId ascending on ties) */
  byConn: ':byconn',
  /** ZSET identity → −last active of its most recent entry (V4 order) */
  byIdentity: ':byident',
  /** HASH identity → connId of its most recent entry (the member object an identity page shows) */
  identityConn: ':identconn',
  /**
   * ZSET, every score 0: `<identity length>:<identity>|<activity rank>|<connId>` per entry, so a
   * lexicographic range finds one identity's most recent entry without a key per identity.
   */
  identityEntries: ':idententries',
} as const;

const TOPIC_SUFFIXES = Object.values(PRESENCE_TOPIC_SUFFIXES);
