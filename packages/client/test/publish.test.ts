/**
 * Publishing without silent loss (docs/client.md, "Publishing"): a publish resolves only once
 * the server relayed it, the offline queue is bounded, the flush keeps to the server's rate limit,
 * and a reconnect on `online` is spread. A real gateway (memory engine, the server's default
 * CLIENT_MESSAGES_PER_SECOND of 100) behind a TCP relay the test can cut, so the client really
 * goes offline.
 */
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { connect } from 'node:net';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { QueueFullError, SwitchboardError } from '../src';
import { closeClients, newClient, nextEvent, RecordingWebSocket, refusingClient } from './support/helpers';
import { waitFor } from '@switchboard/harness';

let node: TestGateway;
let key: ApiKeyRecord;

/** A TCP relay to the gateway: `cut()` drops every connection through it and refuses new ones. */
interface Relay {
  port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function startRelay(target: number): Promise<Relay> {
  let up = true;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    restore: () => {
      up = true;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let relay: Relay;

beforeAll(async () => {
  node = await startGateway({ memoryState: createMemoryState() });
  key = await createTestKey(node.engine);
  relay = await startRelay(node.port);
});

afterEach(() => {
  closeClients();
  relay.restore();
});
afterAll(async () => {
  await relay.close();
  await node.close();
});

const url = (): string => `ws://127.0.0.1:${relay.port}`;
const socketsOf = (uuid: string): RecordingWebSocket[] =>
  RecordingWebSocket.opened.filter((socket) => socket.query.get('uuid') === uuid);

describe('publishing while offline', () => {
  it('250 publishes while offline: those over the bound reject with QueueFullError, the rest arrive after the reconnect, paced (no 4029)', async () => {
    const listener = await connectClient(`ws://127.0.0.1:${node.port}/v4/offline-room?api_key=${key.key}`);
    // A bound over the server's 100 messages per second: sent at once, they would close the socket.
    const sb = newClient({ url: url(), apiKey: key.key, backoff: { baseMs: 200 }, maxQueued: 150 });
    const room = sb.channel('offline-room');
    await room.ready();
    relay.cut();
    await waitFor('disconnected', () => sb.state === 'disconnected', 5000);

    const results = Array.from({ length: 250 }, (_, n) => room.publish('n', n));
    const settled = Promise.allSettled(results);
    relay.restore();
    const outcomes = await settled;

    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused).toHaveLength(100);
    for (const outcome of refused) {
      expect(outcome.reason).toBeInstanceOf(QueueFullError);
      expect(outcome.reason).toMatchObject({ kind: 'queue_full', limit: 150, channel: 'offline-room' });
    }
    // The first 150 were kept and each resolved only once the server relayed it.
    expect(outcomes.slice(0, 150).every((outcome) => outcome.status === 'fulfilled')).toBe(true);
    const delivered = listener.received
      .map((frame) => frame.json)
      .filter((frame) => frame?.['event'] === 'n')
      .map((frame) => frame?.['data']);
    expect(delivered).toEqual(Array.from({ length: 150 }, (_, n) => n));
    // The flush kept to the server's rate: the socket that carried it is still open. (Attempts made
    // while the relay was cut fail with 1006 before any frame, so how many sockets came before it
    // depends on the backoff's timing; none of them was closed by the server's rate limit.)
    const sockets = socketsOf(sb.uuid);
    const carrier = sockets[sockets.length - 1]!;
    expect(carrier.readyState).toBe(RecordingWebSocket.OPEN);
    const closes = await Promise.all(sockets.slice(0, -1).map((socket) => socket.closeEvent));
    expect(closes.map((close) => close.code)).not.toContain(4029);
    expect(sb.state).toBe('connected');
    listener.close();
  });

  it('the bound is 100 messages per channel by default; maxQueued sets it', async () => {
    const sb = newClient({ url: url(), apiKey: key.key, maxQueued: 2 });
    const room = sb.channel('bound-room');
    const kept = [room.publish('a'), room.publish('b')];
    await expect(room.publish('c')).rejects.toBeInstanceOf(QueueFullError);
    await Promise.all(kept);
    const byDefault = newClient({ url: url(), apiKey: key.key }).channel('default-bound');
    const hundred = Array.from({ length: 100 }, (_, n) => byDefault.publish('n', n));
    await expect(byDefault.publish('n', 100)).rejects.toMatchObject({ kind: 'queue_full', limit: 100 });
    await Promise.all(hundred);
    expect(() => newClient({ url: url(), apiKey: key.key, maxQueued: 0 })).toThrow(TypeError);
  });
});

describe('confirmation', () => {
  it.each([4, 3] as const)(
    'protocol %i: a publish the server refuses rejects with its text',
    async (protocol) => {
      const { sb, room, side } = await refusingClient(node.engine, {
        url: url(),
        protocol,
        home: 'refused-home',
        side: 'refused-side',
      });
      const refusal = { kind: 'frame', reason: 'Client messages are disabled for this API key' };
      await expect(room.publish('x', 1)).rejects.toMatchObject(refusal);
      // A secondary's refusal names no channel (it comes to the primary): it is still its own.
      await expect(side.publish('y', 2)).rejects.toMatchObject(refusal);
      expect(sb.state).toBe('connected');
    },
  );

  it('a publish written when the connection drops, before the server relayed it, rejects as unconfirmed', async () => {
    const sb = newClient({ url: url(), apiKey: key.key, backoff: { baseMs: 60_000 } });
    const room = sb.channel('drop-room');
    await room.ready();
    const sent = room.publish('lost', 1);
    relay.cut();
    const error = await sent.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    // The relay may have carried the frame before the cut: then it was confirmed.
    if (error !== undefined) {
      expect(error).toBeInstanceOf(SwitchboardError);
      expect(error).toMatchObject({ kind: 'unconfirmed' });
    }
    await waitFor('disconnected', () => sb.state === 'disconnected', 5000);
    // Nothing written is left waiting: a publish now waits in the queue, not for a socket.
    expect(room.state).toBe('pending');
  });
});

describe('online', () => {
  it('reconnects soon after "online", each client after its own random delay (under 1 s)', async () => {
    const listeners: Array<() => void> = [];
    const g = globalThis as { addEventListener?: unknown; removeEventListener?: unknown };
    // Node has no window events; the client listens through globalThis like in a browser.
    g.addEventListener = (type: string, listener: () => void) =>
      type === 'online' && listeners.push(listener);
    g.removeEventListener = () => undefined;
    try {
      const clients = Array.from({ length: 12 }, () =>
        newClient({ url: url(), apiKey: key.key, backoff: { baseMs: 60_000, capMs: 60_000 } }),
      );
      const rooms = clients.map((sb, i) => sb.channel(`online-${i}`));
      await Promise.all(rooms.map((room) => room.ready()));
      relay.cut();
      await waitFor('all disconnected', () => clients.every((sb) => sb.state === 'disconnected'), 5000);
      relay.restore();
      const back = Promise.all(rooms.map((room) => nextEvent(room, 'subscribed', () => true, 5000)));
      const onlineAt = Date.now();
      for (const listener of listeners) listener();
      await back;
      const reopened = clients.map((sb) => socketsOf(sb.uuid)[1]!.createdAt - onlineAt);
      // Spread over the window, not all at once (12 uniform draws over 1 s span more than 200 ms
      // with probability 1 - 3e-7), and none waited for its minute-long backoff.
      expect(Math.max(...reopened) - Math.min(...reopened)).toBeGreaterThan(200);
      expect(Math.max(...reopened)).toBeLessThan(1500);
    } finally {
      delete g.addEventListener;
      delete g.removeEventListener;
    }
  });
});
