import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import {
  connectClient,
  createTestKey,
  pusherBackend,
  pusherSocketUrl,
  signInPusherSocket,
  startGateway,
} from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * Watchlist online state after the engine was away (docs/pusher.md, "Watchlists"): each gateway
 * writes its signed-in users' entries again with the rest of its share (cluster/repair.ts), so
 * watchers hear `offline` when a user's last socket closes even after Redis came back empty, and
 * no `offline` for a user who is still there when Redis kept its data.
 */

let redis: RedisServer;
let one: TestGateway;
let two: TestGateway;
let app: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: `wl-${randomBytes(4).toString('hex')}` };
  one = await startGateway({ env });
  two = await startGateway({ env });
  app = await createTestKey(one.engine);
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await one?.close();
  await two?.close();
  await redis?.stop();
});

/** A raw Pusher socket signed in as `id` (watching `watchlist`), as pusher-js signs in. */
async function signIn(gateway: TestGateway, id: string, watchlist?: string[]): Promise<TestClient> {
  const client = await connectClient(pusherSocketUrl(gateway.port, app.key));
  clients.push(client);
  await signInPusherSocket(client, pusherBackend(app, gateway.port), {
    id,
    ...(watchlist ? { watchlist } : {}),
  });
  return client;
}

const events = (frame: { json: Record<string, unknown> | undefined }): unknown =>
  (frame.json?.['data'] as { events: unknown }).events;

/** Matches a watchlist frame that tells `name` (online, offline) of `user`. */
const watchlistSays =
  (name: string, user: string) =>
  (frame: { json: Record<string, unknown> | undefined }): boolean =>
    frame.json?.['event'] === 'pusher_internal:watchlist_events' &&
    ((events(frame) as { name: string; user_ids: string[] }[] | undefined) ?? []).some(
      (event) => event.name === name && event.user_ids.includes(user),
    );

/** Whether `user` has an entry in its own topic (what makes it online for watchers). */
const online = async (user: string): Promise<boolean> =>
  (
    await one.engine.presence.identities(
      { key: app.key, protocol: 'pusher', channel: `#watchlist-${user}` },
      0,
      1,
    )
  ).count > 0;

it('keeps a watched user online through a Redis restart, and tells its watcher when it goes offline', async () => {
  const watcher = await signIn(one, 'w-restart', ['ada']);
  const ada = await signIn(two, 'ada');
  expect(events(await watcher.nextEvent('pusher_internal:watchlist_events'))).toEqual([
    { name: 'online', user_ids: ['ada'] },
  ]);

  await redis.restart();
  // The key lives in Redis only here: put it back as `SWITCHBOARD_KEYS` would.
  await waitFor('Redis back', async () => one.engine.isAvailable() && two.engine.isAvailable(), 15_000);
  await one.engine.keys.put(app);
  await waitFor('ada written again by its gateway', () => online('ada').catch(() => false), 15_000);
  // Written back after a loss, ada is announced online again (watchers may have missed anything):
  // by ada's gateway when the watcher's was subscribed again in time, else by the watcher's own
  // gateway retelling the watchlist once it is (which may first say offline, if it read before
  // ada was written back).
  await watcher.next(watchlistSays('online', 'ada'), 15_000);

  ada.close();
  await watcher.next(watchlistSays('offline', 'ada'));
}, 30_000);

it('sends no offline for a user still connected when its gateway rewrites its share to a Redis that kept it', async () => {
  const watcher = await signIn(one, 'w-repair', ['bob']);
  const bob = await signIn(two, 'bob');
  expect(events(await watcher.nextEvent('pusher_internal:watchlist_events'))).toEqual([
    { name: 'online', user_ids: ['bob'] },
  ]);

  // What a gateway runs when Redis is back after a disconnection, or when it was wrongly declared dead.
  await two.gateway.context.repair.restore();
  expect(await online('bob')).toBe(true);
  // A late watcher sees bob online.
  const late = await signIn(one, 'w-late', ['bob']);
  expect(events(await late.nextEvent('pusher_internal:watchlist_events'))).toEqual([
    { name: 'online', user_ids: ['bob'] },
  ]);
  bob.close();
  // The first watcher's next event is bob going offline when he left, none before.
  expect(events(await watcher.nextEvent('pusher_internal:watchlist_events'))).toEqual([
    { name: 'offline', user_ids: ['bob'] },
  ]);
  await waitFor('bob gone', async () => !(await online('bob')));
});
