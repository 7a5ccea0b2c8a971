import WebSocket from 'ws';
import { createMemoryState } from '@switchboard/core';
import { createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';

/** Keep-alive is WebSocket ping/pong from the server (docs/protocol.md); uWS's timer granularity is ~4 s. */
let node: TestGateway;
let url: string;

beforeAll(async () => {
  node = await startGateway({ memoryState: createMemoryState(), env: { IDLE_TIMEOUT_SECONDS: '8' } });
  url = node.wsUrl('/v3/idle', { api_key: (await createTestKey(node.engine)).key });
});
afterAll(() => node.close());

it('pings idle sockets, keeps those that answer and closes those that do not', async () => {
  const healthy = new WebSocket(url);
  const silent = new WebSocket(url, { autoPong: false });
  await Promise.all(
    [healthy, silent].map((socket) => new Promise((resolve) => socket.once('open', resolve))),
  );
  const pinged = new Promise((resolve) => healthy.once('ping', resolve));
  const silentClosed = new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)));
  await pinged;
  // Dropped without a close frame (docs/errors.md: 1006), the way uWS ends an unanswered ping.
  expect(await silentClosed).toBe(1006);
  expect(healthy.readyState).toBe(WebSocket.OPEN);
  healthy.close();
}, 30_000);
