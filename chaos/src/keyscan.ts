import type { Cluster, Redis } from 'ioredis';
import type { ChaosCluster } from './cluster';
import type { Truth } from './state';
import { identityOf } from './state';
import { TOPICS } from './plan';

/**
 * Every key in the run's Redis, found with SCAN, must be one docs/redis-keys.md describes, hold
 * what the live cluster explains, and belong to no node that is not running: a ghost (a member or
 * a count of a closed socket, a dead node's index) fails the run, and so does a key nobody
 * documented.
 */

export interface ScannedKey {
  readonly key: string;
  readonly type: string;
  /** The docs/redis-keys.md pattern it matched, or `unknown`. */
  readonly pattern: string;
  /** Why the key is there (from the docs), or what is wrong with it. */
  readonly note: string;
  readonly problem: boolean;
}

export interface KeyScan {
  readonly keys: ScannedKey[];
  /** Keys per pattern. */
  readonly byPattern: Map<string, number>;
  readonly problems: string[];
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Rule {
  readonly pattern: string;
  readonly re: RegExp;
  readonly type: string;
  /** Why it exists; a returned string is a problem with this key. */
  readonly explain: (match: RegExpMatchArray, key: string) => Promise<string | { problem: string }>;
}

export async function scanKeys(
  cluster: ChaosCluster,
  redis: Redis | Cluster,
  truth: Truth,
): Promise<KeyScan> {
  const p = escape(cluster.prefix);
  const k = escape(cluster.key.key);
  const live = new Set<string>(cluster.live.keys());
  const topics = new Set(TOPICS.map((t) => `${t.protocol}|${t.channel}`));
  const presenceOf = (topic: string) => truth.members.filter((m) => `${m.protocol}|${m.channel}` === topic);
  const expectCard = async (key: string, type: string, expected: number, what: string) => {
    const n =
      type === 'hash'
        ? await redis.hlen(key)
        : type === 'zset'
          ? await redis.zcard(key)
          : await redis.scard(key);
    return n === expected ? undefined : `${n} ${what}, ${expected} expected from the sockets open`;
  };
  const problem = (text: string | undefined, note: string) => (text ? { problem: text } : note);
  const nodeOwned = (node: string, note: string) =>
    live.has(node) ? note : { problem: `belongs to ${node}, which is not running` };

  const rules: Rule[] = [
    {
      pattern: '<prefix>:presence:{<key>}:topic:<protocol>|<channel>:<index>',
      re: new RegExp(
        `^${p}:presence:\\{${k}\\}:topic:(v3|v4)\\|(.+):(conns|byconn|byident|identconn|idententries)$`,
      ),
      type: '',
      explain: async ([, protocol, channel, index], key) => {
        const topic = `${protocol}|${channel}`;
        const entries = presenceOf(topic);
        if (!topics.has(topic) || entries.length === 0)
          return { problem: `presence of ${topic}, which has no presence subscription open` };
        const identities = new Set(entries.map(identityOf)).size;
        const perEntry = index === 'conns' || index === 'byconn' || index === 'idententries';
        const type = index === 'conns' || index === 'identconn' ? 'hash' : 'zset';
        return problem(
          await expectCard(
            key,
            type,
            perEntry ? entries.length : identities,
            perEntry ? 'entries' : 'identities',
          ),
          `presence index of ${topic}: ${perEntry ? `${entries.length} entries` : `${identities} identities`}`,
        );
      },
    },
    {
      pattern: '<prefix>:presence:{<key>}:channel-names[:<protocol>]',
      re: new RegExp(`^${p}:presence:\\{${k}\\}:channel-names(?::(v3|v4))?$`),
      type: 'zset',
      explain: async ([, protocol], key) => {
        const expected = [
          ...new Set(truth.members.filter((m) => !protocol || m.protocol === protocol).map((m) => m.channel)),
        ].sort();
        const actual = (await redis.zrange(key, 0, -1)).sort();
        return JSON.stringify(actual) === JSON.stringify(expected)
          ? `channels with presence entries${protocol ? ` (${protocol})` : ''}: ${actual.join(', ')}`
          : { problem: `lists ${actual.join(', ')}; channels with presence open: ${expected.join(', ')}` };
      },
    },
    {
      pattern: '<prefix>:presence:{<key>}:by-node',
      re: new RegExp(`^${p}:presence:\\{${k}\\}:by-node$`),
      type: 'zset',
      explain: async (_, key) => {
        const items = await redis.zrange(key, 0, -1);
        const ghosts = items.filter((item) => !live.has(item.split('|')[0]!));
        if (ghosts.length > 0)
          return { problem: `entries of nodes not running: ${ghosts.slice(0, 5).join(', ')}` };
        return problem(
          items.length === truth.members.length
            ? undefined
            : `${items.length} entries, ${truth.members.length} expected`,
          `per-node index of the ${items.length} presence entries`,
        );
      },
    },
    {
      pattern: '<prefix>:presence-node:{<nodeId>}',
      re: new RegExp(`^${p}:presence-node:\\{(.+)\\}$`),
      type: 'set',
      explain: async ([, node]) => nodeOwned(node!, `API keys where ${node} holds presence entries`),
    },
    {
      pattern: '<prefix>:counts:{<key>}:channels',
      re: new RegExp(`^${p}:counts:\\{${k}\\}:channels$`),
      type: 'zset',
      explain: async () => `connection counts per channel (compared with the sockets open separately)`,
    },
    {
      pattern: '<prefix>:counts:{<key>}:total',
      re: new RegExp(`^${p}:counts:\\{${k}\\}:total$`),
      type: 'string',
      explain: async () => `the key's connection total`,
    },
    {
      pattern: '<prefix>:counts:{<key>}:node:<nodeId>',
      re: new RegExp(`^${p}:counts:\\{${k}\\}:node:(.+)$`),
      type: 'hash',
      explain: async ([, node]) => nodeOwned(node!, `connections ${node} contributed, per channel`),
    },
    {
      pattern: '<prefix>:counts-node:{<nodeId>}',
      re: new RegExp(`^${p}:counts-node:\\{(.+)\\}$`),
      type: 'set',
      explain: async ([, node]) => nodeOwned(node!, `API keys where ${node} holds counts`),
    },
    {
      pattern: '<prefix>:log:{<key>}',
      re: new RegExp(`^${p}:log:\\{${k}\\}$`),
      type: 'list',
      explain: async (_, key) => `the key's message log (${await redis.llen(key)} records)`,
    },
    {
      pattern: '<prefix>:apikey:{keystore}:<key>',
      re: new RegExp(`^${p}:apikey:\\{keystore\\}:${k}$`),
      type: 'hash',
      explain: async () => 'the API key record (SWITCHBOARD_KEYS, applied again after each Redis restart)',
    },
    {
      pattern: '<prefix>:apikeys:{keystore}',
      re: new RegExp(`^${p}:apikeys:\\{keystore\\}$`),
      type: 'set',
      explain: async (_, key) => {
        const members = await redis.smembers(key);
        return members.length === 1 && members[0] === cluster.key.key
          ? 'the index of API keys'
          : { problem: `lists ${members.join(', ')}` };
      },
    },
    {
      pattern: '<prefix>:history:{<key>|<protocol>|<channel>}:meta:<generation>|stream',
      re: new RegExp(`^${p}:history:\\{${k}\\|(v3|v4)\\|(.+)\\}:(meta|stream)(?::[A-Za-z0-9_-]+)?$`),
      type: '',
      explain: async ([, protocol, channel, part], key) => {
        const topic = `${protocol}|${channel}`;
        if (!topics.has(topic)) return { problem: `history of ${topic}, a topic the run never used` };
        const ttl = await redis.pttl(key);
        if (ttl <= 0) return { problem: `no TTL (${ttl})` };
        const type = await redis.type(key);
        if (type !== (part === 'meta' ? 'hash' : 'list')) return { problem: `a ${type}` };
        return `${part === 'meta' ? 'epoch and offset' : 'latest publications'} of ${topic}, expiring in ${Math.round(ttl / 1000)} s`;
      },
    },
    {
      pattern: '<prefix>:nodes',
      re: new RegExp(`^${p}:nodes$`),
      type: 'zset',
      explain: async (_, key) => {
        const nodes = (await redis.zrange(key, 0, -1)).sort();
        const expected = [...live].sort();
        return JSON.stringify(nodes) === JSON.stringify(expected)
          ? `node registry: ${nodes.join(', ')}`
          : { problem: `registers ${nodes.join(', ')}; running: ${expected.join(', ')}` };
      },
    },
  ];
  // Documented keys this run has no reason to create: no webhook, no quota, no connection limit.
  const unexpected: Array<[string, RegExp, string]> = [
    [
      '<prefix>:webhook:{<key>}:…',
      new RegExp(`^${p}:webhook:`),
      'a webhook key, but no webhook is configured',
    ],
    ['<prefix>:apikeys-webhook:{keystore}', new RegExp(`^${p}:apikeys-webhook:`), 'no key has a webhook'],
    ['<prefix>:quota:{<key>}:…', new RegExp(`^${p}:quota:`), 'a quota key, but no quota is configured'],
    [
      '<prefix>:counts:{<key>}:sockets[-total]',
      new RegExp(`^${p}:counts:\\{${k}\\}:sockets(-total)?$`),
      'a socket reservation, but MAX_CONNECTIONS_PER_KEY is not set',
    ],
  ];

  const keys: ScannedKey[] = [];
  let cursor = '0';
  const names: string[] = [];
  // On a Redis Cluster, SCAN walks one node's keys: every master's.
  for (const node of 'nodes' in redis ? redis.nodes('master') : [redis]) {
    do {
      const [next, batch] = await node.scan(cursor, 'COUNT', 500);
      cursor = next;
      names.push(...batch);
    } while (cursor !== '0');
  }
  for (const key of [...new Set(names)].sort()) {
    const type = await redis.type(key);
    if (type === 'none') continue; // expired or removed since SCAN saw it
    const bad = unexpected.find(([, re]) => re.test(key));
    if (bad) {
      keys.push({ key, type, pattern: bad[0], note: bad[2], problem: true });
      continue;
    }
    let scanned: ScannedKey | undefined;
    for (const rule of rules) {
      const match = key.match(rule.re);
      if (!match) continue;
      const result =
        rule.type && rule.type !== type
          ? { problem: `a ${type}, documented as ${rule.type}` }
          : await rule.explain(match, key);
      scanned =
        typeof result === 'string'
          ? { key, type, pattern: rule.pattern, note: result, problem: false }
          : { key, type, pattern: rule.pattern, note: result.problem, problem: true };
      break;
    }
    keys.push(
      scanned ?? {
        key,
        type,
        pattern: 'unknown',
        note: 'not a documented key (docs/redis-keys.md)',
        problem: true,
      },
    );
  }
  const byPattern = new Map<string, number>();
  for (const key of keys) byPattern.set(key.pattern, (byPattern.get(key.pattern) ?? 0) + 1);
  return {
    keys,
    byPattern,
    problems: keys.filter((key) => key.problem).map((key) => `${key.key} (${key.type}): ${key.note}`),
  };
}
