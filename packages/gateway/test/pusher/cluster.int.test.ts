import { startRedisCluster } from '@switchboard/harness';
import type { RedisClusterHandle } from '@switchboard/harness';
import type { ApiKeyRecord } from '@switchboard/core';
import { createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { Channel, PresenceChannel } from 'pusher-js';
import { localPusherJs } from './support';

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

const backend = (gateway: TestGateway): Pusher =>
  new Pusher({
    appId: app.key,
    key: app.key,
    secret: app.secret,
    host: '127.0.0.1',
    port: String(gateway.port),
  });

async function connect(gateway: TestGateway, userId = 'anonymous'): Promise<PusherJs> {
  const signer = backend(gateway);
  const client = localPusherJs({ key: app.key, port: gateway.port, signer, presence: { user_id: userId } });
  clients.push(client);
  await new Promise<void>((resolve) => client.connection.bind('connected', () => resolve()));
  return client;
}

function subscribed(client: PusherJs, name: string): Promise<Channel> {
  const channel = client.subscribe(name);
  return new Promise((resolve) => channel.bind('pusher:subscription_succeeded', () => resolve(channel)));
}

const next = (channel: Channel, event: string): Promise<unknown> =>
  new Promise((resolve) => {
    const handler = (data: unknown): void => {
      channel.unbind(event, handler);
      resolve(data);
    };
    channel.bind(event, handler);
  });

it('fans triggers out across gateways on Redis Cluster, leaving out socket_id', async () => {
  const [a, b] = await Promise.all([connect(one), connect(two)]);
  // Channel names in different slots of the cluster.
  for (const name of ['alpha', 'beta', 'gamma']) {
    const [onA, onB] = await Promise.all([subscribed(a, name), subscribed(b, name)]);
    const seenA: unknown[] = [];
    onA.bind('tick', (data: unknown) => seenA.push(data));
    const gotB = next(onB, 'tick');
    await backend(two).trigger(name, 'tick', { name }, { socket_id: a.connection.socket_id });
    expect(await gotB).toEqual({ name });
    const done = next(onA, 'done');
    await backend(one).trigger(name, 'done', {});
    await done;
    expect(seenA).toEqual([]);
  }
});

it('keeps presence exact on Redis Cluster: two tabs of one user are one member', async () => {
  const observer = await connect(one, 'watcher');
  const room = (await subscribed(observer, 'presence-clustered')) as PresenceChannel;
  const added: unknown[] = [];
  room.bind('pusher:member_added', (member: unknown) => added.push(member));
  const joined = next(room, 'pusher:member_added');
  const tab1 = await connect(one, 'zoe');
  await subscribed(tab1, 'presence-clustered');
  await joined;
  const tab2 = await connect(two, 'zoe');
  const second = (await subscribed(tab2, 'presence-clustered')) as PresenceChannel;
  expect(second.members.count).toBe(2);
  const gone = next(room, 'pusher:member_removed');
  tab1.disconnect();
  tab2.disconnect();
  expect(await gone).toMatchObject({ id: 'zoe' });
  expect(added).toHaveLength(1);
  expect(room.members.count).toBe(1);
});
