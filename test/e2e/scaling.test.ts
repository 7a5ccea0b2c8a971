import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '@switchboard/cli';
import type { Engine } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { postJson } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/**
 * Scaling as `kubectl scale` does it: one node, two more added while clients are connected and a
 * backend publishes, then the two removed again (SIGTERM, drain). Clients reconnect through the
 * "load balancer" (the pool of ready nodes) when closed with 4000.
 */
const key = testKey();
let redis: RedisServer;
let reader: Engine;
const started: NodeProcess[] = [];

interface Session {
  readonly node: NodeProcess;
  readonly openedAt: number;
  closedAt?: number;
  readonly seqs: number[];
}

class ReconnectingClient {
  readonly sessions: Session[] = [];
  private stopped = false;
  constructor(
    readonly user: string,
    private readonly pool: () => NodeProcess[],
    first: NodeProcess,
  ) {
    this.connect(first);
  }
  get connected(): Session | undefined {
    const last = this.sessions[this.sessions.length - 1];
    return last && last.closedAt === undefined ? last : undefined;
  }
  stop(): void {
    this.stopped = true;
  }
  private connect(node: NodeProcess): void {
    const socket = new WebSocket(
      node.wsUrl('/v4/scale', { api_key: key.key, presence: '1', user: this.user }),
    );
    let session: Session | undefined;
    socket.on('open', () => {
      session = { node, openedAt: Date.now(), seqs: [] };
      this.sessions.push(session);
    });
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { event?: string; seq?: number };
      if (typeof message.seq === 'number') session?.seqs.push(message.seq);
    });
    socket.on('error', () => undefined);
    socket.on('close', (code) => {
      if (session) session.closedAt = Date.now();
      if (this.stopped) return;
      if (code !== 4000) throw new Error(`${this.user}: unexpected close ${code}`);
      const candidates = this.pool().filter((n) => n !== node);
      this.connect(candidates[Math.floor(Math.random() * candidates.length)]!);
    });
    this.close = () => socket.close();
  }
  close: () => void = () => undefined;
}

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const node of started) node.proc.kill('SIGKILL');
  await reader?.close();
  await redis.stop();
});

it('adds and removes nodes under load without losing messages for connected clients', async () => {
  const env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `s${randomBytes(4).toString('hex')}`,
    SWITCHBOARD_KEYS: JSON.stringify([{ key: key.key, secret: key.secret }]),
    DRAIN_GRACE_MS: '3000',
  };
  reader = await createEngine(loadConfig({}, { ...env, LOG_LEVEL: 'silent' }), {
    logger: createLogger({ level: 'silent' }),
  });
  const launch = async (): Promise<NodeProcess> => {
    const node = await startNodeProcess(env);
    started.push(node);
    return node;
  };
  const a = await launch();
  let pool: NodeProcess[] = [a];
  const clients: ReconnectingClient[] = [];
  for (let i = 0; i < 20; i++) clients.push(new ReconnectingClient(`a${i}`, () => pool, a));
  await waitFor('first clients connected', () => clients.every((c) => c.connected), 5000);

  // A backend publishing through the node that stays, one message at a time.
  const acked: number[] = [];
  const sentAt = new Map<number, number>();
  let publishing = true;
  const publisher = (async () => {
    for (let seq = 1; publishing; seq++) {
      sentAt.set(seq, Date.now());
      const response = await postJson(`${a.httpUrl}/api/v4/publish`, {
        key: key.key,
        secret: key.secret,
        channel: 'scale',
        message: { event: 'tick', seq },
      });
      expect(response.status).toBe(200);
      acked.push(seq);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();

  const [b, c] = [await launch(), await launch()];
  pool = [a, b, c];
  for (let i = 0; i < 10; i++) clients.push(new ReconnectingClient(`b${i}`, () => pool, i % 2 ? b : c));
  await waitFor('clients on new nodes connected', () => clients.every((cl) => cl.connected), 5000);
  await waitFor('publishes under way', () => acked.length > 100, 10_000);

  pool = [a];
  b.proc.kill('SIGTERM');
  c.proc.kill('SIGTERM');
  expect((await b.proc.exited).code).toBe(0);
  expect((await c.proc.exited).code).toBe(0);
  await waitFor(
    'everyone back on the remaining node',
    () => clients.every((cl) => cl.connected?.node === a),
    5000,
  );
  const resumedAt = acked.length;
  await waitFor('more publishes', () => acked.length > resumedAt + 50, 10_000);
  publishing = false;
  await publisher;
  const last = acked[acked.length - 1]!;
  await waitFor(
    'last message delivered',
    () => clients.every((cl) => cl.connected!.seqs.includes(last)),
    5000,
  );

  for (const client of clients) {
    for (const session of client.sessions) {
      // No gaps while connected: a session receives a contiguous run of the publisher's sequence.
      const { seqs } = session;
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1]! + 1);
      // …starting no later than the first message published after the client saw `open`.
      const firstAfterOpen = acked.find((seq) => sentAt.get(seq)! > session.openedAt);
      if (firstAfterOpen !== undefined && seqs.length > 0)
        expect(seqs[0]).toBeLessThanOrEqual(firstAfterOpen);
    }
    expect(client.sessions.length).toBe(client.user.startsWith('b') ? 2 : 1);
    expect(client.connected!.seqs[client.connected!.seqs.length - 1]).toBe(last);
  }
  const members = await postJson(`${a.httpUrl}/api/v4/members`, {
    key: key.key,
    secret: key.secret,
    channel: 'scale',
  });
  expect(members.body['count']).toBe(30);
  await waitFor('counts match the sockets', async () => (await reader.counts.sum(key.key)) === 30, 5000);
  expect((await reader.counts.list(key.key)).items).toEqual([{ channel: 'scale', count: 30 }]);
  for (const client of clients) {
    client.stop();
    client.close();
  }
}, 60_000);
