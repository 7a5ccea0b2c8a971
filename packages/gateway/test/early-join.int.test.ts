import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import Redis from 'ioredis';
import type { ApiKeyRecord } from '@switchboard/core';
import { startRedis, waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { RedisServer } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

/**
 * A new presence socket's join starts while it is admitted (connections/early-joins.ts), and the upgrade
 * does not wait for it: the socket opens at once, gets its member list once the join is
 * answered, and a client that leaves while its join is in flight is announced, then removed.
 */

let redis: RedisServer;
let admin: Redis;
let node: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
  node = await startGateway({
    env: { REDIS_URL: redis.url, REDIS_PREFIX: `early-${randomBytes(4).toString('hex')}` },
  });
  key = await createTestKey(node.engine);
});

afterAll(async () => {
  await admin?.call('CLIENT', 'UNPAUSE').catch(() => undefined);
  for (const client of clients) client.close();
  for (const socket of sockets) socket.destroy();
  await node?.close();
  admin?.disconnect();
  await redis?.stop();
});

/** A raw upgrade request on a TCP socket: what arrives is seen chunk by chunk, as written. */
function rawUpgrade(path: string, chunks: Buffer[]): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(node.port, '127.0.0.1', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      resolve(socket);
    });
    sockets.push(socket);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
  });
}

const observe = async (channel: string): Promise<TestClient> => {
  const observer = await connectClient(
    node.wsUrl(`/v4/${channel}`, { api_key: key.key, presence: '1', user: 'observer' }),
  );
  clients.push(observer);
  await observer.nextEvent('system::member_list');
  return observer;
};

const eventFor = (name: string, user: string) => (f: { json: Record<string, unknown> | undefined }) =>
  f.json?.['event'] === name && (f.json['data'] as { member: { user?: string } }).member.user === user;

it('opens a presence socket at once and sends its member list once its join is answered', async () => {
  await observe('lobby');
  // Writes wait while paused: the join issued during admission stays unanswered.
  await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
  const chunks: Buffer[] = [];
  await rawUpgrade(`/v4/lobby?api_key=${key.key}&presence=1&user=ann`, chunks);
  await waitFor('the upgrade response', () => chunks.length > 0);
  const opened = Buffer.concat(chunks).toString('latin1');
  expect(opened.startsWith('HTTP/1.1 101')).toBe(true);
  expect(opened).not.toContain('system::member_list');
  expect(node.gateway.context.earlyJoins.size).toBe(0);

  await admin.call('CLIENT', 'UNPAUSE');
  await waitFor('the member list', () => Buffer.concat(chunks).toString('latin1').includes('member_list'));
  const list = Buffer.concat(chunks).toString('latin1');
  expect(list).toContain('"user":"ann"');
  expect(list).toContain('"user":"observer"');
});

it('announces and removes a socket whose client left while its join was in flight', async () => {
  const observer = await observe('hall');
  await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
  const chunks: Buffer[] = [];
  const ghost = await rawUpgrade(`/v4/hall?api_key=${key.key}&presence=1&user=ghost`, chunks);
  await waitFor('the upgrade response', () => chunks.length > 0);
  ghost.destroy();
  // The gateway has seen the client go once it has answered a request sent after that.
  expect((await fetch(`${node.httpUrl}/api/live`)).status).toBe(200);
  await admin.call('CLIENT', 'UNPAUSE');

  // Joined, then left, in that order: the leave waited for the join.
  await observer.next(eventFor('system::member_left', 'ghost'));
  const ghostEvents = observer.received
    .filter(
      (f) => eventFor('system::member_joined', 'ghost')(f) || eventFor('system::member_left', 'ghost')(f),
    )
    .map((f) => f.json?.['event']);
  expect(ghostEvents).toEqual(['system::member_joined', 'system::member_left']);
  const members = await node.engine.presence.identities(
    { key: key.key, protocol: 'v4', channel: 'hall' },
    0,
    10,
  );
  expect(members.members.map((m) => m.user)).toEqual(['observer']);
});
