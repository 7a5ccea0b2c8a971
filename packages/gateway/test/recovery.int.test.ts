import { randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { ApiKeyRecord, Topic } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * A Redis outage on one node, Redis keeping its data: the node's presence in Redis must come out
 * exactly as its open sockets are (stale entries removed with their events, live ones kept),
 * whatever happened meanwhile, and without the node keeping a record per closed socket.
 */

/** A TCP hop to Redis that can be cut (every connection dropped, new ones refused) and restored. */
class CuttableLink {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private cut = false;

  constructor(redisPort: number) {
    this.server = createServer((client) => {
      if (this.cut) return void client.destroy();
      const upstream = connect(redisPort, '127.0.0.1');
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.sockets.add(from);
        from.pipe(to);
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.sockets.delete(from);
          to.destroy();
        });
      }
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  sever(): void {
    this.cut = true;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.cut = false;
  }

  async close(): Promise<void> {
    this.sever();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let redis: RedisServer;
let link: CuttableLink;
let cutNode: TestGateway;
let observerNode: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  link = new CuttableLink(redis.port);
  const prefix = `rec-${randomBytes(4).toString('hex')}`;
  cutNode = await startGateway({
    env: { REDIS_URL: `redis://127.0.0.1:${await link.listen()}`, REDIS_PREFIX: prefix },
  });
  observerNode = await startGateway({ env: { REDIS_URL: redis.url, REDIS_PREFIX: prefix } });
  key = await createTestKey(observerNode.engine);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await cutNode?.close();
  await observerNode?.close();
  await link?.close();
  await redis?.stop();
});

const open = async (node: TestGateway, path: string, query: Record<string, string>): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(path, { api_key: key.key, presence: '1', ...query }));
  clients.push(client);
  return client;
};
type Frame = { json: Record<string, unknown> | undefined };
const v3Left = (uuid: string) => (f: Frame) =>
  f.json?.['event'] === 'system:member_left' &&
  (f.json['data'] as { member: { uuid: string } }).member.uuid === uuid;
const v4Left = (user: string) => (f: Frame) =>
  f.json?.['event'] === 'system::member_left' &&
  (f.json['data'] as { member: { user?: string } }).member.user === user;

it('leaves exactly the open sockets present after an outage, with one member_left per stale entry', async () => {
  const v3Room: Topic = { key: key.key, protocol: 'v3', channel: 'room' };
  const v4Room: Topic = { key: key.key, protocol: 'v4', channel: 'room' };
  const observer3 = await open(observerNode, '/v3/room', { uuid: 'obs3' });
  const observer4 = await open(observerNode, '/v4/room', { user: 'obs' });
  const stale3 = [];
  for (const uuid of ['p1', 'p2', 'p3', 'p4']) stale3.push(await open(cutNode, '/v3/room', { uuid }));
  const live3 = await open(cutNode, '/v3/room', { uuid: 'p5' });
  const staleU = await open(cutNode, '/v4/room', { user: 'u' });
  const liveU = await open(cutNode, '/v4/room', { user: 'u' });
  const staleV = await open(cutNode, '/v4/room', { user: 'v' });
  for (const client of [...stale3, live3]) await client.nextEvent('system:member_list');
  for (const client of [staleU, liveU, staleV]) await client.nextEvent('system::member_list');
  // A join Redis applied but whose reply the node never got (a timeout): the node does not know it.
  const nodeId = cutNode.config.nodeId;
  await observerNode.engine.presence.join(
    v4Room,
    { connId: `${nodeId}/lost-reply`, nodeId, member: { uuid: 'g', user: 'ghost' } },
    Date.now(),
  );

  link.sever();
  await waitFor('the node sees Redis lost', () => !cutNode.engine.isAvailable());
  for (const client of [...stale3, staleU, staleV]) {
    client.close();
    await client.closed;
  }
  // Sockets that come and go during the outage (admitted from the node's last known key record).
  for (let i = 0; i < 20; i++) {
    const passing = await open(cutNode, '/v3/room', { uuid: `churn${i}` });
    passing.close();
    await passing.closed;
  }
  await waitFor('the node has closed them', () => cutNode.gateway.context.registry.size === 2);

  link.restore();
  const uuids = async (topic: Topic) =>
    (await observerNode.engine.presence.roster(topic, 100)).members.map((m) => m.uuid).sort();
  await waitFor('presence rewritten', async () => {
    const [v3, v4] = [await uuids(v3Room), await uuids(v4Room)];
    return v3.join() === 'obs3,p5' && v4.length === 2;
  });
  const identities = await observerNode.engine.presence.identities(v4Room, 0, 10);
  expect(identities.members.map((m) => m.user).sort()).toEqual(['obs', 'u']);

  // In any order: the stale entries are removed concurrently.
  await waitFor('member_left for every stale entry', () =>
    [
      ...['p1', 'p2', 'p3', 'p4'].map((uuid) => observer3.received.some(v3Left(uuid))),
      ...['v', 'ghost'].map((user) => observer4.received.some(v4Left(user))),
    ].every(Boolean),
  );
  // `u` is still present through its other socket: no member_left for it, none for the live ones.
  await observer4.expectSilence(v4Left('u'));
  expect(observer3.received.filter(v3Left('p5'))).toEqual([]);
  expect(observer3.received.filter((f) => f.json?.['event'] === 'system:member_left')).toHaveLength(4);
});
