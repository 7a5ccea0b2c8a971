import Redis from 'ioredis';
import { generationOf } from '../src/redis/connection-health';
import { startRedis, waitFor } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';

/**
 * A server's generation against real servers (docs/architecture.md, "Failover: no position is
 * given twice"): it changes on a restart and on a promotion, and not when a master's first
 * replica attaches, although Redis draws a new `master_replid` then.
 */

let master: RedisServer;
let replica: RedisServer;
const clients: Redis[] = [];

beforeAll(async () => {
  [master, replica] = await Promise.all([startRedis(), startRedis()]);
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await Promise.all([master?.stop(), replica?.stop()]);
});

const connect = (server: RedisServer): Redis => {
  const client = new Redis(server.url);
  client.on('error', () => undefined);
  clients.push(client);
  return client;
};

const info = async (client: Redis): Promise<string> =>
  `${await client.info('server')}\n${await client.info('replication')}`;

const replid = (text: string): string | undefined => /^master_replid:(\S+)/m.exec(text)?.[1];

it('keeps the generation when the first replica attaches, and changes it on a promotion and a restart', async () => {
  const primary = connect(master);
  const secondary = connect(replica);
  const before = await info(primary);
  const generation = generationOf(before);
  expect(generation).toEqual(expect.any(String));

  await secondary.call('REPLICAOF', '127.0.0.1', String(master.port));
  await waitFor(
    'the replica in sync',
    async () => /master_link_status:up/.test(await secondary.info('replication')),
    10_000,
    50,
  );
  const attached = await info(primary);
  // Redis created its backlog and drew a new replication id: nothing was lost.
  expect(replid(attached)).not.toBe(replid(before));
  expect(generationOf(attached)).toBe(generation);
  expect(generationOf(await info(secondary))).toBeUndefined();

  await secondary.call('REPLICAOF', 'NO', 'ONE');
  const promoted = generationOf(await info(secondary));
  expect(promoted).toEqual(expect.any(String));
  expect(promoted).not.toBe(generation);

  await master.restart();
  const restarted = connect(master);
  const again = generationOf(await info(restarted));
  expect(again).toEqual(expect.any(String));
  expect(again).not.toBe(generation);
});
