import type { ApiKeyRecord } from '@switchboard/core';
import { ENGINE_UNCONFIRMED, HTTP_ERRORS } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * What a 503 tells a backend about its publish (docs/errors.md, `SB_ENGINE_UNAVAILABLE`). Refused
 * while Redis is unreachable: nothing was published, retrying is safe. Sent to a Redis that then
 * stops answering (stalled, or a half-open connection): the request fails once the command
 * timeout passes instead of hanging, and says that it may have been carried out, because Redis
 * runs what it received once it moves again. The publication then has its offset, reaches every
 * subscriber (those of the node that answered 503 too) and is in the channel's history, so a
 * backend that reads the history before retrying publishes it once.
 */

let redis: RedisServer;
let node: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  node = await startGateway({ env: { REDIS_URL: redis.url } });
  key = await createTestKey(node.engine);
});

afterAll(async () => {
  for (const client of clients) client.close();
  redis?.thaw();
  await node?.close();
  await redis?.stop();
});

const publish = (message: string): ReturnType<typeof postJson> =>
  postJson(`${node.httpUrl}/api/publish`, { key: key.key, secret: key.secret, channel: 'room', message });

const history = async (): Promise<string[]> => {
  const answer = await postJson(`${node.httpUrl}/api/history`, {
    key: key.key,
    secret: key.secret,
    channel: 'room',
  });
  expect(answer.status).toBe(200);
  return (answer.body['publications'] as Array<{ message: string }>).map((p) => p.message);
};

it('a publish sent to a Redis that stopped answering fails with 503 "may have been carried out", and is made once Redis runs again', async () => {
  const subscriber = await connectClient(node.wsUrl('/v3/room', { api_key: key.key }));
  clients.push(subscriber);
  expect((await publish('before')).body).toMatchObject({ success: true, offset: 1 });

  redis.freeze();
  const stalled = await publish('during the stall');
  expect(stalled.status).toBe(503);
  expect(stalled.body).toEqual({ success: false, code: 'SB_ENGINE_UNAVAILABLE', error: ENGINE_UNCONFIRMED });

  redis.thaw();
  // Redis runs the script it had received: the publication got the next offset and is stored.
  await waitFor('the stalled publish to be made', async () => (await history()).includes('during the stall'));
  expect(await history()).toEqual(['before', 'during the stall']);
  expect((await publish('after')).body).toMatchObject({ success: true, offset: 3 });
  // The node that answered 503 delivers it to its own subscribers when Redis hands it back, as
  // every other node does: once, in its place.
  await subscriber.next((frame) => frame.text === 'after');
  expect(subscriber.received.map((frame) => frame.text)).toEqual(['before', 'during the stall', 'after']);
});

it('a publish while Redis is unreachable is refused with 503 "not carried out", and nothing is published', async () => {
  await redis.kill();
  await waitFor('the node to see Redis gone', async () => !node.engine.isAvailable());
  const refused = await publish('while down');
  expect(refused.status).toBe(503);
  expect(refused.body).toEqual({
    success: false,
    code: 'SB_ENGINE_UNAVAILABLE',
    error: HTTP_ERRORS.SB_ENGINE_UNAVAILABLE.message,
  });
  await redis.restart();
  await waitFor('the node to reach Redis again', async () => node.engine.isAvailable());
  // Redis restarted empty (the key too, which a real deployment would have persisted): a new
  // stream, and the refused publication is nowhere.
  await node.engine.keys.put(key);
  const back = await publish('back');
  expect(back.body).toMatchObject({ success: true, offset: 1 });
  expect(await history()).toEqual(['back']);
});
