import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import {
  createTestKey,
  localPusherJs,
  nextPusherEvent as next,
  pusherBackend,
  pusherJsConnected,
  pusherJsSubscribed as subscribed,
  startGateway,
} from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import type PusherJs from 'pusher-js';
import type { Channel } from 'pusher-js';

/**
 * Pusher's subscription counting (docs/pusher.md, "Subscription counts"): `pusher-js` 8 on two
 * gateways over one real Redis, keys with the option on and off.
 */

let redis: RedisServer;
let one: TestGateway;
let two: TestGateway;
/** A key with subscription counting on, and one without (the default). */
let counting: ApiKeyRecord;
let plain: ApiKeyRecord;
const clients: PusherJs[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url };
  one = await startGateway({ env });
  two = await startGateway({ env });
  counting = await createTestKey(one.engine, { subscriptionCount: true });
  plain = await createTestKey(one.engine);
}, 30_000);
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  await one?.close();
  await two?.close();
  await redis?.stop();
});

/** The master key end-to-end encrypted channels derive their secrets from (the backend's). */
const encryptionMasterKeyBase64 = Buffer.alloc(32, 7).toString('base64');

/** A connected pusher-js client of `app` on `gateway`, its channels authorized by the `pusher` SDK. */
async function connect(app: ApiKeyRecord, gateway: TestGateway, user = 'anonymous'): Promise<PusherJs> {
  const client = localPusherJs({
    key: app.key,
    port: gateway.port,
    signer: pusherBackend(app, gateway.port, { encryptionMasterKeyBase64 }),
    presence: { user_id: user, user_info: {} },
  });
  clients.push(client);
  await pusherJsConnected(client);
  return client;
}

/** Every count a channel hears (`pusher:subscription_count`), and a wait for a given one. */
interface Counts {
  readonly seen: number[];
  reaches(count: number): Promise<void>;
}

/** Subscribes `client` to `name`, recording the counts from before its success on. */
async function subscribeCounting(
  client: PusherJs,
  name: string,
): Promise<{ channel: Channel; counts: Counts }> {
  const channel = client.subscribe(name);
  const seen: number[] = [];
  const waiters: Array<{ count: number; resolve(): void }> = [];
  channel.bind('pusher:subscription_count', (data: { subscription_count: number }) => {
    seen.push(data.subscription_count);
    for (const waiter of waiters.filter((w) => w.count === data.subscription_count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  await new Promise<void>((resolve, reject) => {
    channel.bind('pusher:subscription_succeeded', () => resolve());
    channel.bind('pusher:subscription_error', (error: unknown) =>
      reject(new Error(`subscription error: ${JSON.stringify(error)}`)),
    );
  });
  const counts: Counts = {
    seen,
    reaches: (count) =>
      seen[seen.length - 1] === count
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ count, resolve })),
  };
  return { channel, counts };
}

describe('with subscription counting on', () => {
  it.each([
    ['public', 'lobby'],
    ['private', 'private-lobby'],
    ['encrypted', 'private-encrypted-lobby'],
    ['cache', 'cache-lobby'],
  ])(
    'tells %s channel subscribers the cluster-wide count as others join and leave on the other gateway',
    async (_kind, name) => {
      const ada = await connect(counting, one);
      const adas = await subscribeCounting(ada, name);
      // A new subscriber hears the count right after its subscription succeeded.
      await adas.counts.reaches(1);
      expect(adas.counts.seen[0]).toBe(1);

      const bob = await connect(counting, two);
      const cy = await connect(counting, two);
      const [bobs] = await Promise.all([subscribeCounting(bob, name), subscribeCounting(cy, name)]);
      await adas.counts.reaches(3);
      await bobs.counts.reaches(3);
      // pusher-js keeps the latest count on the channel.
      expect((adas.channel as unknown as { subscriptionCount: number }).subscriptionCount).toBe(3);

      bob.disconnect();
      cy.unsubscribe(name);
      await adas.counts.reaches(1);
      expect((adas.channel as unknown as { subscriptionCount: number }).subscriptionCount).toBe(1);
      // Counts only ever name subscribers there were: never 0, never more than 3.
      expect(adas.counts.seen.every((count) => count >= 1 && count <= 3)).toBe(true);
    },
    20_000,
  );

  it('coalesces a burst of joins into a few events per gateway, ending at the right count', async () => {
    const ada = await connect(counting, one);
    const adas = await subscribeCounting(ada, 'burst');
    await adas.counts.reaches(1);
    const crowd = await Promise.all(Array.from({ length: 20 }, () => connect(counting, two)));
    await Promise.all(crowd.map((client) => subscribed(client, 'burst')));
    await adas.counts.reaches(21);
    // One event per join would be 20; the gateway announces at most once a second per channel
    // (the first at once, the rest at the interval's end), so a burst is a handful.
    expect(adas.counts.seen.length).toBeLessThanOrEqual(6);
  }, 20_000);

  it("announces, at the interval's end, a count that changed without an announcement of its own", async () => {
    const ada = await connect(counting, one);
    const adas = await subscribeCounting(ada, 'drift');
    await adas.counts.reaches(1);
    // Another node's share written with no event (a repair's rewrite; an overtaken event looks the
    // same to gateway one): gateway one reads the channel again when its second is over.
    await two.engine.counts.increment('elsewhere', counting.key, 'drift', 'pusher');
    await adas.counts.reaches(2);
    expect(adas.counts.seen).toEqual([1, 2]);
    await two.engine.counts.decrement('elsewhere', counting.key, 'drift', 'pusher');
    await adas.counts.reaches(1);
  }, 20_000);

  it('sends presence channels no counts (they have member events)', async () => {
    const ada = await connect(counting, one, 'ada');
    const presence = await subscribeCounting(ada, 'presence-room');
    const control = await subscribeCounting(ada, 'control');
    const bob = await connect(counting, two, 'bob');
    const joined = next(presence.channel, 'pusher:member_added');
    const bobsPresence = await subscribeCounting(bob, 'presence-room');
    await subscribed(bob, 'control');
    await joined;
    // The counts of the public channel joined at the same time came; the presence channel's would have too.
    await control.counts.reaches(2);
    const marker = next(presence.channel, 'marker');
    await pusherBackend(counting, two.port).trigger('presence-room', 'marker', {});
    await marker;
    expect(presence.counts.seen).toEqual([]);
    expect(bobsPresence.counts.seen).toEqual([]);
  }, 20_000);
});

describe('with subscription counting off (the default)', () => {
  it('sends no counts', async () => {
    const ada = await connect(plain, one);
    const adas = await subscribeCounting(ada, 'lobby');
    const bob = await connect(plain, two);
    const bobs = await subscribeCounting(bob, 'lobby');
    // The same steps on a key with counting on, at the same time, on the same gateways.
    const control = await subscribeCounting(await connect(counting, one), 'quiet');
    await subscribed(await connect(counting, two), 'quiet');
    await control.counts.reaches(2);
    const marker = next(adas.channel, 'marker');
    await pusherBackend(plain, two.port).trigger('lobby', 'marker', {});
    await marker;
    expect(adas.counts.seen).toEqual([]);
    expect(bobs.counts.seen).toEqual([]);
  }, 20_000);
});
