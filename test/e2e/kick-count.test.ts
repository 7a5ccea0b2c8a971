/**
 * A kick through the cluster API answers how many sockets it closed on every gateway, not only
 * on the one that answered (docs/protocol.md, "Kicks"): two gateway processes over a real Redis,
 * standalone and a 3-master Cluster, with sockets on both. A gateway that does not answer
 * (SIGSTOPped) makes the answer partial at the deadline, never a hang and never a failed kick.
 */
import { randomBytes } from 'node:crypto';
import { startRedis, startRedisCluster } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { TestClient } from '@switchboard/testing';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/** `KICK_REPLY_DEADLINE_MS` in core's channel actions. */
const DEADLINE_MS = 2000;

const backends = [
  {
    kind: 'standalone',
    start: async () => {
      const redis = await startRedis();
      return { env: { REDIS_URL: redis.url }, stop: () => redis.stop() };
    },
  },
  {
    kind: 'cluster',
    start: async () => {
      const cluster = await startRedisCluster();
      return { env: { REDIS_CLUSTER_NODES: cluster.nodesEnv }, stop: () => cluster.stop() };
    },
  },
] as const;

describe.each(backends)('kick counts across gateways, Redis $kind', ({ start }) => {
  const key = testKey();
  let stop: () => Promise<void> = async () => undefined;
  let a: NodeProcess;
  let b: NodeProcess;
  const clients: TestClient[] = [];

  beforeAll(async () => {
    const backend = await start();
    stop = backend.stop;
    const env = {
      ...backend.env,
      REDIS_PREFIX: `kc${randomBytes(4).toString('hex')}`,
      LOG_LEVEL: 'info',
      SWITCHBOARD_KEYS: JSON.stringify([{ key: key.key, secret: key.secret }]),
    };
    [a, b] = await Promise.all([startNodeProcess(env), startNodeProcess(env)]);
  }, 60_000);

  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  afterAll(async () => {
    for (const node of [a, b]) {
      node?.proc.kill('SIGCONT');
      node?.proc.kill('SIGKILL');
    }
    await Promise.all([a, b].map((node) => node?.proc.exited));
    await stop();
  });

  const kick = (node: NodeProcess, body: Record<string, unknown>) =>
    postJson(`${node.httpUrl}/api/v4/kick`, { key: key.key, secret: key.secret, ...body });

  /** `count` V4 sockets on `node` in `channel`, each proven subscribed by a publish reaching it. */
  async function sockets(node: NodeProcess, channel: string, count: number): Promise<TestClient[]> {
    const opened = await Promise.all(
      Array.from({ length: count }, () => connectClient(node.wsUrl(`/v4/${channel}`, { api_key: key.key }))),
    );
    clients.push(...opened);
    return opened;
  }
  async function subscribed(channel: string, all: TestClient[]): Promise<void> {
    const marker = `ready-${randomBytes(3).toString('hex')}`;
    const published = await postJson(`${a.httpUrl}/api/v4/publish`, {
      key: key.key,
      secret: key.secret,
      channel,
      message: marker,
    });
    expect(published.status).toBe(200);
    for (const client of all) await client.next((frame) => frame.text === marker);
  }
  const kicked = async (client: TestClient): Promise<void> => {
    expect((await client.closed).code).toBe(4509);
  };

  it('answers the total closed on both gateways, and 0 for a kick that matches nothing', async () => {
    const onA = await sockets(a, 'room', 2);
    const onB = await sockets(b, 'room', 3);
    const bystander = (await sockets(b, 'other', 1))[0]!;
    await subscribed('room', [...onA, ...onB]);

    const answer = await kick(a, { channel: 'room' });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ success: true, kicked: 5, complete: true });
    for (const client of [...onA, ...onB]) await kicked(client);

    expect((await kick(a, { channel: 'nobody-here' })).body).toEqual({
      success: true,
      kicked: 0,
      complete: true,
    });
    // Through the other gateway as well: B's count of A's sockets travels back the same way.
    const lone = await sockets(a, 'lone', 1);
    await subscribed('lone', lone);
    expect((await kick(b, { channel: 'lone' })).body).toEqual({ success: true, kicked: 1, complete: true });
    await kicked(lone[0]!);
    await bystander.expectSilence();
  });

  it('answers within the deadline with what was counted, marked partial, while a gateway is stopped', async () => {
    const onA = await sockets(a, 'frozen', 1);
    const onB = await sockets(b, 'frozen', 2);
    await subscribed('frozen', [...onA, ...onB]);
    b.proc.kill('SIGSTOP');
    try {
      const started = Date.now();
      const answer = await kick(a, { channel: 'frozen' });
      const took = Date.now() - started;
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ success: true, kicked: 1, complete: false });
      expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
      expect(took).toBeLessThan(DEADLINE_MS + 3000);
      await kicked(onA[0]!);
    } finally {
      b.proc.kill('SIGCONT');
    }
    // The kick reached the stopped gateway all the same: it carries it out once it runs again.
    for (const client of onB) await kicked(client);
    // And its late reply is ignored: the next kick counts exactly again.
    const again = await sockets(b, 'frozen', 1);
    await subscribed('frozen', again);
    expect((await kick(a, { channel: 'frozen' })).body).toEqual({ success: true, kicked: 1, complete: true });
  });
});
