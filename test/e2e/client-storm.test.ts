/**
 * The reconnect storm: 500 @switchboard/client clients on a gateway process that is SIGTERMed
 * (it drains: every socket closed with 4000 at once) reconnect through a second gateway on the
 * same Redis. Their full-jitter backoff spreads the reconnects over more than a second, and every
 * client recovers every publication made meanwhile, once and in order.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { startRedis, waitFor } from '@switchboard/harness';
import { postJson } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import { Switchboard } from '@switchboard/client';
import type { Channel } from '@switchboard/client';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

const CLIENTS = 500;
const CHANNELS = 5;
const key = testKey();
let redis: RedisServer;
const nodes: NodeProcess[] = [];
const clients: Switchboard[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: `s${randomBytes(4).toString('hex')}`,
    SWITCHBOARD_KEYS: JSON.stringify([{ key: key.key, secret: key.secret, domains: [] }]),
    // Every socket in one batch: the harshest storm, nothing spread by the server.
    DRAIN_BATCH_SIZE: String(CLIENTS),
  };
  nodes.push(await startNodeProcess(env), await startNodeProcess(env));
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.close();
  for (const node of nodes) node.proc.kill('SIGKILL');
  await redis.stop();
});

interface Watched {
  channel: Channel;
  seen: number[];
  recovered: number | undefined;
  unrecovered: boolean;
  /** When the client was connected again after the drain. */
  reconnectedAt: number | undefined;
}

describe('a reconnect storm', () => {
  it('spreads 500 reconnects over more than a second and every client recovers every publication', async () => {
    const [doomed, survivor] = nodes as [NodeProcess, NodeProcess];
    const url = (node: NodeProcess): string => `ws://127.0.0.1:${node.port}`;
    const watched: Watched[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const sb = new Switchboard({ url: [url(doomed), url(survivor)], apiKey: key.key, WebSocket });
      clients.push(sb);
      const entry: Watched = {
        channel: sb.channel(`storm-${i % CHANNELS}`),
        seen: [],
        recovered: undefined,
        unrecovered: false,
        reconnectedAt: undefined,
      };
      entry.channel.on('n', (data) => entry.seen.push(data as number));
      entry.channel.on('recovered', ({ missed }) => (entry.recovered = missed));
      entry.channel.on('unrecovered', () => (entry.unrecovered = true));
      sb.on('state', (state, previous) => {
        if (state === 'connected' && previous === 'connecting' && entry.recovered === undefined)
          entry.reconnectedAt ??= Date.now();
      });
      watched.push(entry);
    }
    // Connected, with a position to resume from.
    await waitFor(
      'every client positioned',
      () => watched.every((w) => w.channel.epoch !== undefined),
      30_000,
    );
    for (const w of watched) w.reconnectedAt = undefined;

    const published = new Array<number>(CHANNELS).fill(0);
    const publishRound = async (node: NodeProcess): Promise<void> => {
      await Promise.all(
        published.map(async (_, c) => {
          const n = ++published[c]!;
          const { status } = await postJson(`${node.httpUrl}/api/v4/publish`, {
            key: key.key,
            secret: key.secret,
            channel: `storm-${c}`,
            message: { event: 'n', data: n },
          });
          expect(status).toBe(200);
        }),
      );
    };
    await publishRound(doomed);
    await waitFor('the first round', () => watched.every((w) => w.seen.length === 1), 10_000);

    const terminatedAt = Date.now();
    doomed.proc.kill('SIGTERM');
    // Publications keep coming through the survivor while the clients are away and coming back.
    while (watched.some((w) => w.recovered === undefined && !w.unrecovered)) {
      await publishRound(survivor);
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (Date.now() - terminatedAt > 30_000) break;
    }
    await publishRound(survivor);
    expect((await doomed.proc.exited).code).toBe(0);

    const total = published[0]!;
    await waitFor('every publication everywhere', () => watched.every((w) => w.seen.length >= total), 20_000);
    expect(watched.filter((w) => w.unrecovered)).toHaveLength(0);
    for (const w of watched) expect(w.seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // Some publications were made while clients were away: recovery, not live delivery, brought them.
    expect(watched.some((w) => (w.recovered ?? 0) > 0)).toBe(true);

    const times = watched.map((w) => w.reconnectedAt!).filter((time) => time !== undefined);
    expect(times).toHaveLength(CLIENTS);
    const spreadMs = Math.max(...times) - Math.min(...times);
    process.stdout.write(
      `reconnect storm: ${CLIENTS} clients reconnected over ${spreadMs} ms (first ${Math.min(...times) - terminatedAt} ms after SIGTERM); ${total} publications per channel\n`,
    );
    expect(spreadMs).toBeGreaterThanOrEqual(1000);
  }, 90_000);
});
