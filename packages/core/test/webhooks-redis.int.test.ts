import { generateKeyRecord } from '../src/keys/key-store';
import type { RedisClients } from '../src/redis/clients';
import { RedisConnectionCounts } from '../src/counts/counts-redis';
import { RedisKeyStore } from '../src/keys/key-store-redis';
import { RedisPresenceStore } from '../src/presence/presence-redis';
import { RedisWebhookQueue } from '../src/webhooks/webhooks-redis';
import { describeWebhooksContract } from './contracts/webhooks.contract';
import { describeEachRedis } from './support/redis-targets';
import { unique } from './support/wait';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeWebhooksContract('redis', async (limits) => {
    const keys = backend().freshKeys();
    const client = clients.command;
    return {
      counts: new RedisConnectionCounts(client, keys),
      presence: new RedisPresenceStore(client, keys),
      webhooks: new RedisWebhookQueue(client, keys, limits),
      keys: new RedisKeyStore(client, keys),
    };
  });

  it('leaves no webhook switch, stream, consumer group, lease or byte count behind a deleted key, even while it is being read', async () => {
    const keys = backend().freshKeys();
    const client = clients.command;
    const store = new RedisKeyStore(client, keys);
    const queue = new RedisWebhookQueue(client, keys);
    const counts = new RedisConnectionCounts(client, keys);
    const key = unique('gone');
    await store.put({
      ...generateKeyRecord(),
      key,
      webhook: { url: 'http://example.test/hook', events: ['channel_occupied', 'client_event'] },
    });
    await counts.increment('node-a', key, 'room');
    await queue.append(key, { name: 'client_event', channel: 'room', event: 'typing' });
    expect(await queue.lease(key, 'gw1', 60_000)).toBe(true);
    expect(await queue.next(key, 'gw1', 100)).toHaveLength(2);
    const left = async (): Promise<number> =>
      client.exists(
        keys.webhookSwitch(key),
        keys.webhookEvents(key),
        keys.webhookLease(key),
        keys.webhookBytes(key),
      );
    expect(await left()).toBe(4);

    expect(await store.delete(key)).toBe(true);
    expect(await left()).toBe(0);
    // A dispatcher that has not noticed the deletion yet reads on: it creates nothing again.
    expect(await queue.next(key, 'gw1', 100)).toEqual([]);
    expect(await queue.depth(key)).toBe(0);
    await counts.increment('node-b', key, 'other');
    expect(await queue.next(key, 'gw1', 100)).toEqual([]);
    expect(await left()).toBe(0);
  });

  it('delivers entries an older node stored and left pending, and skips pending entries with nothing to deliver', async () => {
    const keys = backend().freshKeys();
    const client = clients.command;
    const queue = new RedisWebhookQueue(client, keys);
    const key = unique('old');
    const stream = keys.webhookEvents(key);
    // What a node of the previous version left: its group, a batch read and not acknowledged.
    const json = '{"channel":"room\\/1","name":"member_added","user_id":"alice"}';
    const old = await client.xadd(stream, '*', 'e', json);
    const trimmed = await client.xadd(stream, '*', 'e', '{"name":"channel_occupied","channel":"c2"}');
    await client.xadd(stream, '*', 'x', 'not an event');
    await client.xgroup('CREATE', stream, 'dispatch', '0');
    await client.xreadgroup('GROUP', 'dispatch', 'old-node', 'COUNT', 100, 'STREAMS', stream, '>');
    await client.xdel(stream, trimmed!);

    const batch = await queue.next(key, 'new-node', 100);
    expect(batch).toEqual([{ id: old, storedAt: Number(old!.split('-')[0]), json }]);
    expect(JSON.parse(batch[0]!.json)).toEqual({ name: 'member_added', channel: 'room/1', user_id: 'alice' });
    // The trimmed and the malformed entry were acknowledged (and deleted): only the event is left.
    expect(await client.xpending(stream, 'dispatch')).toEqual([1, old, old, [['new-node', '1']]]);
    expect(await client.xrange(stream, '-', '+')).toEqual([[old, ['e', json]]]);
    expect(await queue.next(key, 'new-node', 100, [old!])).toEqual([]);
    expect(await queue.depth(key)).toBe(0);
  });
});
