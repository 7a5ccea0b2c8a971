import { startRedisCluster } from '@switchboard/harness';
import type { RedisClusterHandle } from '@switchboard/harness';
import type { ApiKeyRecord } from '@switchboard/core';
import {
  createTestKey,
  localPusherJs,
  nextPusherEvent,
  pusherBackend,
  pusherJsConnected,
  pusherJsSubscribed,
  startGateway,
} from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import type Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { PresenceChannel } from 'pusher-js';

/**
 * Pusher channels on a real Redis Cluster (three masters): fan-out through sharded pub/sub,
 * presence through the presence scripts in the channels' slots, across two gateways.
 */

let cluster: RedisClusterHandle;
let one: TestGateway;
let two: TestGateway;
let app: ApiKeyRecord;
const clients: PusherJs[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  const env = { REDIS_CLUSTER_NODES: cluster.nodesEnv };
  one = await startGateway({ env });
  two = await startGateway({ env });
  app = await createTestKey(one.engine);
}, 60_000);
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await cluster?.stop();
});

const backend = (gateway: TestGateway): Pusher => pusherBackend(app, gateway.port);

async function connect(gateway: TestGateway, userId = 'anonymous'): Promise<PusherJs> {
  const signer = backend(gateway);
  const client = localPusherJs({ key: app.key, port: gateway.port, signer, presence: { user_id: userId } });
  clients.push(client);
  await pusherJsConnected(client);
  return client;
}

it('fans triggers out across gateways on Redis Cluster, leaving out socket_id', async () => {
  const [a, b] = await Promise.all([connect(one), connect(two)]);
  // Channel names in different slots of the cluster.
  for (const name of ['alpha', 'beta', 'gamma']) {
    const [onA, onB] = await Promise.all([pusherJsSubscribed(a, name), pusherJsSubscribed(b, name)]);
    const seenA: unknown[] = [];
    onA.bind('tick', (data: unknown) => seenA.push(data));
    const gotB = nextPusherEvent(onB, 'tick');
    await backend(two).trigger(name, 'tick', { name }, { socket_id: a.connection.socket_id });
    expect(await gotB).toEqual({ name });
    const done = nextPusherEvent(onA, 'done');
    await backend(one).trigger(name, 'done', {});
    await done;
    expect(seenA).toEqual([]);
  }
});

it('keeps presence exact on Redis Cluster: two tabs of one user are one member', async () => {
  const observer = await connect(one, 'watcher');
  const room = await pusherJsSubscribed<PresenceChannel>(observer, 'presence-clustered');
  const added: unknown[] = [];
  room.bind('pusher:member_added', (member: unknown) => added.push(member));
  const joined = nextPusherEvent(room, 'pusher:member_added');
  const tab1 = await connect(one, 'zoe');
  await pusherJsSubscribed(tab1, 'presence-clustered');
  await joined;
  const tab2 = await connect(two, 'zoe');
  const second = await pusherJsSubscribed<PresenceChannel>(tab2, 'presence-clustered');
  expect(second.members.count).toBe(2);
  const gone = nextPusherEvent(room, 'pusher:member_removed');
  tab1.disconnect();
  tab2.disconnect();
  expect(await gone).toMatchObject({ id: 'zoe' });
  expect(added).toHaveLength(1);
  expect(room.members.count).toBe(1);
});
