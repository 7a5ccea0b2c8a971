import type { Cluster, Redis } from 'ioredis';
import type { ChaosCluster } from './cluster';
import type { Fleet } from './fleet';
import { GATEWAYS, TOPICS } from './plan';
import type { Protocol } from './plan';

/**
 * What the cluster reports (account API, cluster API, Redis, each gateway's metrics) against what
 * is true: the sockets actually open on the clients' side, with their channels and presence.
 */

export interface Member {
  readonly channel: string;
  readonly protocol: Protocol;
  readonly uuid: string;
  readonly user: string | undefined;
}

const memberId = (m: Member): string => `${m.channel}|${m.protocol}|${m.uuid}|${m.user ?? ''}`;
export const identityOf = (m: { uuid: string; user: string | undefined }): string => m.user ?? m.uuid;

export interface Truth {
  /** Open subscriptions per channel, both protocols (a V4 socket once per channel it carries). */
  readonly counts: Map<string, number>;
  /** One per presence subscription on an open socket. */
  readonly members: readonly Member[];
  readonly sockets: number;
}

/** The truth, read from the sockets open now (not from what the clients believe). */
export function truthOf(fleet: Fleet): Truth {
  const counts = new Map<string, number>();
  const members: Member[] = [];
  let sockets = 0;
  for (const client of fleet.clients) {
    for (const tap of client.openTaps) {
      sockets++;
      for (const channel of tap.subscribed) {
        counts.set(channel, (counts.get(channel) ?? 0) + 1);
        const sub = channel === tap.primary ? undefined : tap.subscribes.get(channel);
        const presence = channel.startsWith('presence-') || (sub ? sub['presence'] === true : tap.presence);
        if (!presence) continue;
        const uuid = (typeof sub?.['uuid'] === 'string' ? sub['uuid'] : tap.uuid) ?? '';
        const user = typeof sub?.['user'] === 'string' ? sub['user'] : tap.user;
        members.push({ channel, protocol: tap.protocol, uuid, user });
      }
    }
  }
  return { counts, members, sockets };
}

export interface Observation {
  /** Differences between what the cluster reports and the truth; empty: converged. */
  readonly differences: string[];
  readonly summary: string;
}

const sortedEntries = (map: Map<string, number>): string =>
  JSON.stringify([...map].filter(([, n]) => n !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function compareMaps(what: string, actual: Map<string, number>, expected: Map<string, number>): string[] {
  return sortedEntries(actual) === sortedEntries(expected)
    ? []
    : [`${what}: ${sortedEntries(actual)}, sockets open: ${sortedEntries(expected)}`];
}

function compareLists(what: string, actual: string[], expected: string[]): string[] {
  const a = [...actual].sort();
  const e = [...expected].sort();
  if (JSON.stringify(a) === JSON.stringify(e)) return [];
  const extra = a.filter((x) => !e.includes(x));
  const missing = e.filter((x) => !a.includes(x));
  return [
    `${what}: ${a.length} listed for ${e.length} open; not open: [${extra.join(', ')}]; not listed: [${missing.join(', ')}]`,
  ];
}

async function getJson(url: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  if (response.status !== 200)
    throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
}

/** Reads counts and members through every interface and compares them with the sockets open now. */
export async function observe(
  cluster: ChaosCluster,
  fleet: Fleet,
  redis: Redis | Cluster,
): Promise<Observation> {
  const truth = truthOf(fleet);
  const differences: string[] = [];
  const headers = { key: cluster.key.key, secret: cluster.key.secret };
  const { prefix } = cluster;
  const k = cluster.key.key;

  // Account API: /api/connections, /api/connections/sum, /api/members.
  const connections = (await getJson(`${cluster.accountUrl}/api/connections`, { headers })) as Array<{
    channel_id: string;
    connection_count: number;
  }>;
  differences.push(
    ...compareMaps(
      'account API /api/connections',
      new Map(connections.map((c) => [c.channel_id, c.connection_count])),
      truth.counts,
    ),
  );
  const sum = (await getJson(`${cluster.accountUrl}/api/connections/sum`, { headers })) as {
    connection_count: number;
  };
  const expectedSum = [...truth.counts.values()].reduce((a, b) => a + b, 0);
  if (sum.connection_count !== expectedSum)
    differences.push(
      `account API /api/connections/sum: ${sum.connection_count}, subscriptions open: ${expectedSum}`,
    );
  const members = (await getJson(`${cluster.accountUrl}/api/members`, { headers })) as Record<
    string,
    Array<{ uuid: string; user?: unknown; protocol: Protocol }>
  >;
  const listed = Object.entries(members).flatMap(([channel, list]) =>
    list.map((m) =>
      memberId({
        channel,
        protocol: m.protocol,
        uuid: m.uuid,
        user: typeof m.user === 'string' ? m.user : undefined,
      }),
    ),
  );
  differences.push(...compareLists('account API /api/members', listed, truth.members.map(memberId)));

  // Cluster API through the balancer: V4 identities (deduplicated), V3 member objects.
  for (const topic of TOPICS.filter((t) => t.channel.startsWith('presence-') || t.protocol === 'v4')) {
    const path = topic.protocol === 'v4' ? '/api/v4/members' : '/api/members';
    const answer = (await getJson(`${cluster.balancerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: cluster.key.key, secret: cluster.key.secret, channel: topic.channel }),
    })) as { members: unknown[]; count?: number };
    const expected = truth.members.filter(
      (m) => m.channel === topic.channel && m.protocol === topic.protocol,
    );
    if (topic.protocol === 'v4') {
      const identities = [...new Set(expected.map(identityOf))];
      differences.push(
        ...compareLists(
          `cluster API /api/v4/members ${topic.channel}`,
          answer.members.map(String),
          identities,
        ),
      );
      if (answer.count !== identities.length)
        differences.push(
          `cluster API /api/v4/members ${topic.channel}: count ${answer.count}, identities ${identities.length}`,
        );
    } else {
      const objects = answer.members as Array<{ uuid: string; user?: unknown }>;
      differences.push(
        ...compareLists(
          `cluster API /api/members ${topic.channel}`,
          objects.map((m) => `${m.uuid}|${typeof m.user === 'string' ? m.user : ''}`),
          expected.map((m) => `${m.uuid}|${m.user ?? ''}`),
        ),
      );
    }
  }

  // Redis directly: the counts, every node's share, presence entries, the node registry.
  const zset = await redis.zrange(`${prefix}:counts:{${k}}:channels`, 0, -1, 'WITHSCORES');
  const redisCounts = new Map<string, number>();
  for (let i = 0; i < zset.length; i += 2) redisCounts.set(zset[i]!, -Number(zset[i + 1]));
  differences.push(...compareMaps(`Redis ${prefix}:counts:{…}:channels`, redisCounts, truth.counts));
  const total = Number((await redis.get(`${prefix}:counts:{${k}}:total`)) ?? 0);
  if (total !== expectedSum)
    differences.push(`Redis counts total ${total}, subscriptions open ${expectedSum}`);
  const nodes = await redis.zrange(`${prefix}:nodes`, 0, -1);
  differences.push(...compareLists(`Redis ${prefix}:nodes`, nodes, [...cluster.live.keys()]));
  const shares = new Map<string, number>();
  const perNode: string[] = [];
  for (const name of GATEWAYS) {
    const hash = await redis.hgetall(`${prefix}:counts:{${k}}:node:${name}`);
    let nodeTotal = 0;
    for (const [channel, n] of Object.entries(hash)) {
      shares.set(channel, (shares.get(channel) ?? 0) + Number(n));
      nodeTotal += Number(n);
    }
    const gauge = cluster.live.has(name) ? await subscriptionsGauge(cluster.metricsPorts[name]) : 0;
    perNode.push(`${name} ${gauge}`);
    if (gauge !== nodeTotal)
      differences.push(
        `${name}: ${gauge} subscriptions (its metrics), ${nodeTotal} in its Redis counts share`,
      );
  }
  differences.push(...compareMaps('Redis counts summed over the nodes’ shares', shares, truth.counts));
  for (const topic of TOPICS) {
    const entries = await redis.hvals(
      `${prefix}:presence:{${k}}:topic:${topic.protocol}|${topic.channel}:conns`,
    );
    const parsed = entries.map(
      (text) => JSON.parse(text) as { n: string; m: { uuid: string; user?: unknown } },
    );
    const dead = parsed.filter((e) => !cluster.live.has(e.n as never)).map((e) => e.n);
    if (dead.length > 0)
      differences.push(
        `presence of ${topic.protocol}/${topic.channel} on nodes not running: ${dead.join(', ')}`,
      );
    differences.push(
      ...compareLists(
        `Redis presence ${topic.protocol}/${topic.channel}`,
        parsed.map((e) => `${e.m.uuid}|${typeof e.m.user === 'string' ? e.m.user : ''}`),
        truth.members
          .filter((m) => m.channel === topic.channel && m.protocol === topic.protocol)
          .map((m) => `${m.uuid}|${m.user ?? ''}`),
      ),
    );
  }
  const summary =
    `${truth.sockets} sockets open, ${expectedSum} subscriptions (${sortedEntries(truth.counts)}), ` +
    `${truth.members.length} presence entries; per node (metrics): ${perNode.join(', ')}`;
  return { differences, summary };
}

/** A gateway's `switchboard_subscriptions`, summed over protocols (its own count of what it serves). */
async function subscriptionsGauge(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  let total = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('switchboard_subscriptions{')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}
