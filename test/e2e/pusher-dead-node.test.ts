/**
 * A gateway process SIGKILLed under Pusher presence: the cluster's cleanup of the dead node
 * removes its sockets' presence, and `member_removed` goes out (to the channel and as a webhook,
 * verified by the `pusher` SDK's `webhook()` helper) once per user, only when the user's last
 * socket is gone: not while another tab of the user is open on a surviving gateway.
 */
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, startSwitchboardProcess, WebhookReceiver, waitFor } from '@switchboard/harness';
import type { RedisServer, SwitchboardProcess } from '@switchboard/harness';
import {
  createTestKey,
  localPusherJs,
  nextPusherEvent as next,
  pusherBackend,
  pusherJsConnected,
  pusherJsSubscribed,
  startGateway,
} from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { PresenceChannel } from 'pusher-js';

const FAST = { HEARTBEAT_INTERVAL_MS: '200', NODE_TIMEOUT_MS: '1000' };

let redis: RedisServer;
let survivor: TestGateway;
let doomed: SwitchboardProcess;
let doomedPort: number;
let app: ApiKeyRecord;
let receiver: WebhookReceiver;
const clients: PusherJs[] = [];

beforeAll(async () => {
  redis = await startRedis();
  survivor = await startGateway({ env: { REDIS_URL: redis.url, ...FAST } });
  receiver = new WebhookReceiver({
    verify: (headers, rawBody) => {
      const webhook = new Pusher({ appId: 'a', key: app.key, secret: app.secret, host: '127.0.0.1' }).webhook(
        {
          headers: headers as Record<string, string>,
          rawBody,
        },
      );
      return { valid: webhook.isValid(), events: webhook.getEvents() as never };
    },
  });
  await receiver.up();
  app = await createTestKey(survivor.engine, {
    webhook: { url: receiver.url, events: ['member_added', 'member_removed'] },
  });
  doomed = startSwitchboardProcess(['gateway'], {
    REDIS_URL: redis.url,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...FAST,
  });
  doomedPort = Number((await doomed.waitForLog({ msg: 'ready' }))['port']);
}, 60_000);

afterAll(async () => {
  for (const client of clients) client.disconnect();
  doomed?.kill('SIGKILL');
  await survivor?.close();
  await receiver?.down();
  await redis?.stop();
});

/** pusher-js on `port`, its presence channels authorized for `userId` by the SDK, connected. */
async function connect(port: number, userId: string): Promise<PusherJs> {
  const signer = pusherBackend(app, port);
  const client = localPusherJs({ key: app.key, port, signer, presence: { user_id: userId } });
  clients.push(client);
  await pusherJsConnected(client);
  return client;
}

const subscribed = (client: PusherJs, name: string): Promise<PresenceChannel> =>
  pusherJsSubscribed<PresenceChannel>(client, name);

it('announces member_removed once per user after a gateway is SIGKILLed, only when the user is gone', async () => {
  const observer = await connect(survivor.port, 'observer');
  const room = await subscribed(observer, 'presence-dead');
  const removed: unknown[] = [];
  room.bind('pusher:member_removed', (member: unknown) => removed.push(member));

  // "kim" has a tab on each gateway, "lou" only one, on the gateway that dies.
  const kimThere = await connect(doomedPort, 'kim');
  await subscribed(kimThere, 'presence-dead');
  const kimHere = await connect(survivor.port, 'kim');
  await subscribed(kimHere, 'presence-dead');
  const louJoined = next(room, 'pusher:member_added');
  const lou = await connect(doomedPort, 'lou');
  await subscribed(lou, 'presence-dead');
  await louJoined;

  const louGone = next(room, 'pusher:member_removed');
  doomed.kill('SIGKILL');
  expect(await louGone).toMatchObject({ id: 'lou' });
  // The dead node's entries are all gone once the channel's count is the survivor's two sockets.
  const sdk = pusherBackend(app, survivor.port);
  await waitFor(
    'the dead node’s presence removed',
    async () => {
      const users = await sdk.get({ path: '/channels/presence-dead/users' });
      const ids = ((await users.json()) as { users: { id: string }[] }).users.map((u) => u.id).sort();
      return ids.join(',') === 'kim,observer';
    },
    10_000,
    50,
  );
  expect(room.members.count).toBe(2);

  const kimGone = next(room, 'pusher:member_removed');
  kimHere.disconnect();
  expect(await kimGone).toMatchObject({ id: 'kim' });
  expect(removed).toEqual([
    { id: 'lou', info: undefined },
    { id: 'kim', info: undefined },
  ]);

  await waitFor(
    'the webhooks',
    () => receiver.events().filter((e) => e.name === 'member_removed').length >= 2,
    10_000,
  );
  const hooks = receiver.events().filter((e) => e.channel === 'presence-dead');
  expect(hooks.filter((e) => e.name === 'member_removed').map((e) => e.user_id)).toEqual(['lou', 'kim']);
  expect(
    hooks
      .filter((e) => e.name === 'member_added')
      .map((e) => e.user_id)
      .sort(),
  ).toEqual(['kim', 'lou', 'observer']);
  expect(receiver.counts.malformed).toBe(0);
}, 60_000);
