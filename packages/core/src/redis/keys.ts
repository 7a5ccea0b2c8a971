import type { ApiKey, NodeId, Topic } from '../types';

/**
 * The one module that names Redis keys and pub/sub channels. `docs/redis-keys.md` lists every
 * pattern and a test keeps both in agreement.
 *
 * Hash tags (`{…}`) decide the Redis Cluster slot:
 * - presence and counts of one API key share the tag `{<apiKey>}`, so every multi-key update of a
 *   key (a join touching the topic's sets, the key's channel index and the node's index) is one
 *   atomic Lua script in one slot;
 * - fan-out channels are tagged per topic, so sharded pub/sub spreads channels over the masters;
 *   a topic's history keys share its channel's tag, so one script stores, counts and publishes;
 * - per-node indexes are tagged `{<nodeId>}`, the key store `{keystore}`.
 * The prefix, API keys, node ids and channel names cannot contain braces or `|` (config and
 * protocol validation), so tags and separators are unambiguous.
 */
export interface RedisKeys {
  readonly prefix: string;
  /** Base of one topic's presence keys; the scripts derive `:conns`, `:byconn`, … from it. */
  presenceTopic(topic: Topic): string;
  /** `presenceTopic` without the `<protocol>|<channel>` part, for scripts that walk a key's topics. */
  presenceTopicPrefix(key: ApiKey): string;
  /** `presenceNodeEntries` without the node id, for scripts that find an entry's node. */
  presenceNodePrefix(key: ApiKey): string;
  /** SET of `<protocol>|<channel>` with presence entries, per API key. */
  presenceChannels(key: ApiKey): string;
  /** SET of `<protocol>|<channel>|<connId>` entries a node holds within one API key. */
  presenceNodeEntries(key: ApiKey, nodeId: NodeId): string;
  /** SET of API keys in which a node holds presence entries. */
  presenceNodeKeys(nodeId: NodeId): string;
  /** ZSET channel → −count, per API key. */
  countsChannels(key: ApiKey): string;
  /** STRING: the key's total connection count. */
  countsTotal(key: ApiKey): string;
  /** HASH channel → count contributed by one node. */
  countsNode(key: ApiKey, nodeId: NodeId): string;
  /** SET of API keys in which a node holds counts. */
  countsNodeKeys(nodeId: NodeId): string;
  /** LIST of log records (JSON), newest first. */
  log(key: ApiKey): string;
  /** HASH: one API key record. */
  apiKey(key: ApiKey): string;
  /** SET of every API key. */
  apiKeyIndex(): string;
  /** ZSET nodeId → last heartbeat (ms). */
  nodes(): string;
  /** Pub/sub channel of one topic's publications (sharded on Redis Cluster). */
  fanout(topic: Topic): string;
  /** LIST of one topic's last publications (wire form), oldest first; in `fanout`'s slot. */
  historyStream(topic: Topic): string;
  /** HASH `e` → epoch, `o` → latest offset of one topic's stream; in `fanout`'s slot. */
  historyMeta(topic: Topic): string;
  /** Pub/sub channel of control commands (every node). */
  control(): string;
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
  const topicTag = (t: Topic): string => `{${checked('API key', t.key)}|${topicPart(t)}}`;
  const byNode = (kind: string, nodeId: NodeId): string => `${p}:${kind}:{${checked('node id', nodeId)}}`;
  return {
    prefix: p,
    presenceTopic: (t) => `${byKey('presence', t.key)}:topic:${topicPart(t)}`,
    presenceTopicPrefix: (key) => `${byKey('presence', key)}:topic:`,
    presenceNodePrefix: (key) => `${byKey('presence', key)}:node:`,
    presenceChannels: (key) => `${byKey('presence', key)}:channels`,
    presenceNodeEntries: (key, nodeId) => `${byKey('presence', key)}:node:${checked('node id', nodeId)}`,
    presenceNodeKeys: (nodeId) => byNode('presence-node', nodeId),
    countsChannels: (key) => `${byKey('counts', key)}:channels`,
    countsTotal: (key) => `${byKey('counts', key)}:total`,
    countsNode: (key, nodeId) => `${byKey('counts', key)}:node:${checked('node id', nodeId)}`,
    countsNodeKeys: (nodeId) => byNode('counts-node', nodeId),
    log: (key) => byKey('log', key),
    apiKey: (key) => `${p}:apikey:{keystore}:${checked('API key', key)}`,
    apiKeyIndex: () => `${p}:apikeys:{keystore}`,
    nodes: () => `${p}:nodes`,
    fanout: (t) => `${p}:fanout:${topicTag(t)}`,
    historyStream: (t) => `${p}:history:${topicTag(t)}:stream`,
    historyMeta: (t) => `${p}:history:${topicTag(t)}:meta`,
    control: () => `${p}:control`,
  };
}

/** Suffixes the presence scripts append to `presenceTopic(topic)` (documented with the keys). */
export const PRESENCE_TOPIC_SUFFIXES = {
  /** HASH connId → entry JSON `{"i":identity,"n":nodeId,"m":member}` */
  conns: ':conns',
  /** ZSET connId → −last active (roster order: most recent first, connId ascending on ties) */
  byConn: ':byconn',
  /** ZSET identity → −last active of its most recent entry (V4 order) */
  byIdentity: ':byident',
  /** HASH identity → connId of its most recent entry (the member object an identity page shows) */
  identityConn: ':identconn',
  /** ZSET connId → −last active, one per identity: the identity's entries */
  identity: ':ident:',
} as const;
