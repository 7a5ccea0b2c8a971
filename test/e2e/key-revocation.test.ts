import { randomBytes } from 'node:crypto';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis } from '@switchboard/harness';
import { connectClient, postJson, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestGateway } from '@switchboard/testing';
import { runKeys } from '@switchboard/cli';

/**
 * `switchboard keys …` against the cluster's Redis reaches gateways that cache key records for a
 * minute: the `key-changed` announcement, not the cache expiry, makes the change visible.
 */

let redis: RedisServer;
let env: Record<string, string>;
const nodes: TestGateway[] = [];

async function keys(...argv: string[]): Promise<string> {
  let out = '';
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += chunk.toString();
    return true;
  });
  try {
    expect(await runKeys(argv, env)).toBe(0);
  } finally {
    write.mockRestore();
  }
  return out;
}

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not within 3 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  redis = await startRedis();
  env = { REDIS_URL: redis.url, REDIS_PREFIX: `rev-${randomBytes(4).toString('hex')}`, LOG_LEVEL: 'silent' };
  for (let i = 0; i < 2; i += 1) nodes.push(await startGateway({ env: { ...env, KEY_CACHE_MS: '60000' } }));
});

afterAll(async () => {
  for (const node of nodes) await node.close();
  await redis?.stop();
});

const publish = (node: TestGateway, record: ApiKeyRecord) =>
  postJson(`${node.httpUrl}/api/publish`, {
    key: record.key,
    secret: record.secret,
    channel: 'c',
    message: 'm',
  });

describe('key changes reach every gateway at once', () => {
  test('a new domain list applies and a deleted key is refused on every node despite their caches', async () => {
    const record = JSON.parse(await keys('create', '--json')) as ApiKeyRecord;
    for (const node of nodes)
      await waitFor('the new key', async () => (await publish(node, record)).status === 200);

    await keys('domains', record.key, 'allowed.example');
    // With presence on, an admitted socket's first frame is a presence frame (its member list, or
    // a member_left of an earlier probe that overtook it); a refused one's is the error frame,
    // followed by the close.
    const refused = { error: 'Origin not allowed for this API key' };
    for (const node of nodes) {
      await waitFor('the new domain list', async () => {
        const client = await connectClient(node.wsUrl('/v3/c', { api_key: record.key, presence: '1' }), {
          origin: 'https://evil.example',
        });
        const first = await client.next();
        // Still admitted: its member list, or a presence event of the channel that overtook it.
        if (String(first.json?.['event']).startsWith('system:member_')) {
          client.close();
          return false;
        }
        expect(first.json).toEqual(refused);
        expect(await client.closed).toEqual({ code: 4503, reason: refused.error });
        return true;
      });
      const allowed = await connectClient(node.wsUrl('/v3/c', { api_key: record.key, presence: '1' }), {
        origin: 'https://allowed.example',
      });
      // Admitted: its member list arrives (a member_left of a probe closed above may come first).
      await allowed.next((f) => f.json?.['event'] === 'system:member_list');
      allowed.close();
    }

    await keys('delete', record.key);
    for (const node of nodes)
      await waitFor('the deletion', async () => (await publish(node, record)).status === 401);
  });

  test("a deleted key's open Pusher sockets get 4003 (app disabled) on every node; new ones 4001", async () => {
    const record = JSON.parse(await keys('create', '--json')) as ApiKeyRecord;
    const pusherPath = (key: string) => `/app/${key}?protocol=7&client=js&version=8.4.0`;
    const open = await Promise.all(
      nodes.map(async (node) => {
        const client = await connectClient(`ws://127.0.0.1:${node.port}${pusherPath(record.key)}`);
        await client.nextEvent('pusher:connection_established');
        return client;
      }),
    );
    // A V3 socket of the key stays open: PieSocket keys are checked when a socket connects.
    const v3 = await connectClient(nodes[0]!.wsUrl('/v3/c', { api_key: record.key }));

    await keys('delete', record.key);
    for (const client of open) {
      const error = await client.nextEvent('pusher:error');
      expect(error.json?.['data']).toEqual({ code: 4003, message: 'Application disabled' });
      expect(await client.closed).toEqual({ code: 4003, reason: 'Application disabled' });
    }
    expect(v3.socket.readyState).toBe(v3.socket.OPEN);
    v3.close();

    for (const node of nodes) {
      const late = await connectClient(`ws://127.0.0.1:${node.port}${pusherPath(record.key)}`);
      const error = await late.nextEvent('pusher:error');
      expect(error.json?.['data']).toEqual({ code: 4001, message: 'Application does not exist' });
      expect((await late.closed).code).toBe(4001);
    }
  });
});
