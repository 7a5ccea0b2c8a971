/**
 * Recovery (docs/protocol.md, "History and recovery"; docs/client.md, "Recovery"): every channel
 * resumes from its last offset after the socket is lost, and the application gets each
 * publication once, in order, or is told (`unrecovered`) that it must reload.
 */
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord, MemoryState } from '@switchboard/core';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import type { Channel, Switchboard } from '../src';
import { closeClients, newClient, nextEvent, RecordingWebSocket } from './support/helpers';
import { waitFor } from '@switchboard/harness';

afterEach(() => closeClients());

const wsBase = (node: TestGateway): string => `ws://127.0.0.1:${node.port}`;

async function publishN(
  node: TestGateway,
  key: ApiKeyRecord,
  channel: string,
  from: number,
  to: number,
  version: 'v3' | 'v4',
): Promise<void> {
  for (let n = from; n <= to; n++) {
    const { status } = await postJson(`${node.httpUrl}/api/${version === 'v4' ? 'v4/' : ''}publish`, {
      key: key.key,
      secret: key.secret,
      channel,
      message: { event: 'n', data: n },
    });
    expect(status).toBe(200);
  }
}

/** Every `n` publication a channel delivers, in delivery order. */
function record(channel: Channel): number[] {
  const seen: number[] = [];
  channel.on('n', (data) => seen.push(data as number));
  return seen;
}

/**
 * Node has no window events; the client listens for `online` through globalThis as in a
 * browser. Installed for one test, removed after it.
 */
function onlineEvents(): { fire(): void } {
  const listeners: Array<() => void> = [];
  const g = globalThis as { addEventListener?: unknown; removeEventListener?: unknown };
  g.addEventListener = (type: string, listener: () => void) => type === 'online' && listeners.push(listener);
  g.removeEventListener = () => undefined;
  cleanups.push(() => {
    delete g.addEventListener;
    delete g.removeEventListener;
  });
  return { fire: () => listeners.forEach((listener) => listener()) };
}
const cleanups: Array<() => void> = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The channel has its position (epoch and offset) from the server. */
const positioned = (channel: Channel): Promise<void> =>
  waitFor(`${channel.name} position`, () => channel.epoch !== undefined, 5000);

describe('recovery against gateways sharing one memory engine', () => {
  let state: MemoryState;
  let key: ApiKeyRecord;
  let a: TestGateway;
  let b: TestGateway;

  beforeEach(async () => {
    state = createMemoryState();
    a = await startGateway({ memoryState: state });
    b = await startGateway({ memoryState: state });
    key = await createTestKey(a.engine);
  });

  afterEach(async () => {
    await a.close();
    await b.close();
  });

  it.each([4, 3] as const)(
    "protocol %i: a drained gateway's client resumes every channel through another one, each publication once and in order",
    async (protocol) => {
      const version = protocol === 4 ? 'v4' : 'v3';
      // The reconnect waits a minute unless the host says it is back online: the test decides
      // when the client returns, after the publications it must recover.
      const online = onlineEvents();
      const sb = newClient({
        url: [wsBase(a), wsBase(b)],
        apiKey: key.key,
        protocol,
        backoff: { baseMs: 60_000, capMs: 60_000 },
      });
      const names = ['rc-1', 'rc-2', 'rc-3'];
      const channels = names.map((name) => sb.channel(name));
      const seen = channels.map(record);
      const recovered = channels.map((channel) => nextEvent<[{ missed: number }]>(channel, 'recovered'));
      await Promise.all(channels.map(positioned));
      for (const name of names) await publishN(a, key, name, 1, 5, version);
      await waitFor('the first five', () => seen.every((list) => list.length === 5), 5000);

      const draining = a.gateway.drain();
      await waitFor('disconnected', () => sb.state === 'disconnected', 5000);
      // Published while the client has no socket: only history can bring these.
      for (const name of names) await publishN(b, key, name, 6, 15, version);
      online.fire();
      const missed = await Promise.all(recovered);
      expect(missed.map(([info]) => info.missed)).toEqual([10, 10, 10]);
      await draining;
      for (const name of names) await publishN(b, key, name, 16, 20, version);
      await waitFor('all twenty', () => seen.every((list) => list.length >= 20), 5000);
      for (const list of seen) expect(list).toEqual(range(1, 20));
      // The resume asked for what it had: since = 5 with the channel's epoch.
      const resumed = RecordingWebSocket.opened.filter((s) => s.query.get('uuid') === sb.uuid).at(-1)!;
      expect(resumed.url.startsWith(wsBase(b))).toBe(true);
      expect(resumed.query.get('since')).toBe('5');
      const path = new URL(resumed.url).pathname;
      expect(resumed.query.get('epoch')).toBe(channels.find((c) => path.endsWith(`/${c.name}`))!.epoch);
      expect(channels.map((channel) => channel.offset)).toEqual([20, 20, 20]);
    },
  );

  it.each([4, 3] as const)(
    'protocol %i: a channel subscribed before its first publication and offline through it resumes with every one',
    async (protocol) => {
      const version = protocol === 4 ? 'v4' : 'v3';
      const online = onlineEvents();
      const sb = newClient({
        url: [wsBase(a), wsBase(b)],
        apiKey: key.key,
        protocol,
        backoff: { baseMs: 60_000, capMs: 60_000 },
      });
      const channel = sb.channel('never-yet');
      const seen = record(channel);
      const recovered = nextEvent<[{ missed: number; epoch: string }]>(channel, 'recovered');
      const unrecovered: unknown[] = [];
      channel.on('unrecovered', (info) => unrecovered.push(info));
      await positioned(channel);
      // A channel without history: its position is an empty epoch, stored nowhere.
      const empty = channel.epoch!;
      expect(empty).toMatch(/^_e/);
      const draining = a.gateway.drain();
      await waitFor('disconnected', () => sb.state === 'disconnected', 5000);
      await publishN(b, key, 'never-yet', 1, 5, version);
      online.fire();
      const [info] = await recovered;
      expect(info.missed).toBe(5);
      expect(info.epoch).not.toBe(empty);
      await draining;
      await waitFor('all five', () => seen.length >= 5, 5000);
      expect(seen).toEqual(range(1, 5));
      expect(unrecovered).toEqual([]);
      const resumed = RecordingWebSocket.opened.filter((s) => s.query.get('uuid') === sb.uuid).at(-1)!;
      expect([resumed.query.get('since'), resumed.query.get('epoch')]).toEqual(['0', empty]);
      expect([channel.epoch, channel.offset]).toEqual([info.epoch, 5]);
    },
  );

  it("moves the socket off a left primary without losing or repeating the others' publications", async () => {
    const sb = newClient({ url: wsBase(a), apiKey: key.key });
    const [first, second, third] = ['mv-1', 'mv-2', 'mv-3'].map((name) => sb.channel(name));
    const seen = [second!, third!].map(record);
    await Promise.all([first!, second!, third!].map(positioned));
    // Publications keep flowing while the socket moves from mv-1 to mv-2.
    const flowing = (async () => {
      for (let n = 1; n <= 30; n++)
        for (const name of ['mv-2', 'mv-3']) await publishN(a, key, name, n, n, 'v4');
    })();
    await waitFor('some publications', () => seen[0]!.length >= 3, 5000);
    first!.leave();
    await flowing;
    await waitFor('all thirty', () => seen.every((list) => list.length >= 30), 5000);
    for (const list of seen) expect(list).toEqual(range(1, 30));
  });

  it('never hands the application its own messages (notifySelf off), live or replayed, yet counts their offsets', async () => {
    const online = onlineEvents();
    const sb = newClient({
      url: [wsBase(a), wsBase(b)],
      apiKey: key.key,
      backoff: { baseMs: 60_000, capMs: 60_000 },
    });
    const room = sb.channel('own');
    const seen = record(room);
    await positioned(room);
    await publishN(a, key, 'own', 1, 1, 'v4');
    await room.publish('n', 2);
    await publishN(a, key, 'own', 3, 3, 'v4');
    await waitFor('offset 3', () => room.offset === 3, 5000);
    expect(seen).toEqual([1, 3]);
    await room.publish('n', 4);
    await waitFor('offset 4', () => room.offset === 4, 5000);

    void a.gateway.drain();
    await waitFor('disconnected', () => sb.state === 'disconnected', 5000);
    await publishN(b, key, 'own', 5, 6, 'v4');
    online.fire();
    expect((await nextEvent<[{ missed: number }]>(room, 'recovered'))[0].missed).toBe(2);
    await waitFor('four', () => seen.length === 4, 5000);
    expect(seen).toEqual([1, 3, 5, 6]);
  });

  it('a channel that cannot resume (its history is gone) emits unrecovered and continues live', async () => {
    // A gateway on a fresh memory engine: another epoch, as after an engine restart.
    const fresh = await startGateway({ memoryState: createMemoryState() });
    try {
      await fresh.engine.keys.put({ ...key });
      const sb = newClient({ url: [wsBase(a), wsBase(fresh)], apiKey: key.key, backoff: { baseMs: 50 } });
      const room = sb.channel('lost');
      const seen = record(room);
      await positioned(room);
      await publishN(a, key, 'lost', 1, 3, 'v4');
      await waitFor('three', () => seen.length === 3, 5000);
      const epoch = room.epoch;
      const unrecovered = nextEvent<[{ epoch: string; offset: number }]>(room, 'unrecovered');
      void a.gateway.drain();
      const [info] = await unrecovered;
      expect(info.epoch).not.toBe(epoch);
      expect(room.epoch).toBe(info.epoch);
      await publishN(fresh, key, 'lost', 100, 101, 'v4');
      await waitFor('live after', () => seen.length === 5, 5000);
      expect(seen).toEqual([1, 2, 3, 100, 101]);
    } finally {
      await fresh.close();
    }
  });
});

describe('ordering against a server that repeats offsets', () => {
  // A scripted peer speaking the wire format: a correct gateway never repeats an offset, so the
  // client's own guard can only be shown against one that does.
  let server: WebSocketServer;
  const urls: string[] = [];
  let script: (socket: WebSocket, connection: number) => void;

  beforeEach(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    server.on('connection', (socket, request) => {
      urls.push(request.url ?? '');
      script(socket, urls.length);
    });
  });

  afterEach(async () => {
    urls.length = 0;
    for (const socket of server.clients) socket.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  it('subscribes a secondary again after a refusal marked retry (engine unreachable) instead of failing it', async () => {
    // Found by the chaos run (docs/reliability.md): a secondary subscribed while Redis was down
    // was refused with "History is unavailable" and the channel failed for good.
    const subscribes: Array<Record<string, unknown>> = [];
    script = (socket) => {
      const send = (value: unknown): void => socket.send(JSON.stringify(value));
      send({ event: 'system::position', data: { channel: 'main', epoch: 'e1', offset: 0, missed: 0 } });
      socket.on('message', (raw) => {
        const frame = JSON.parse(String(raw)) as { event?: string; data?: Record<string, unknown> };
        if (frame.event !== 'system::subscribe' || !frame.data) return;
        subscribes.push(frame.data);
        if (subscribes.length < 3) {
          const error = 'History is unavailable (the engine is unreachable); try again with since and epoch';
          send({ event: 'system::subscribe_error', data: { channel: 'side', error, retry: true } });
          return;
        }
        send({ event: 'system::subscribe_success', data: { channel: 'side' } });
        send({
          event: 'system::position',
          data: { channel: 'side', epoch: 'e2', offset: 4, missed: 0 },
          'system::channel': 'side',
        });
      });
    };
    const { port } = server.address() as AddressInfo;
    const sb: Switchboard = newClient({
      url: `ws://127.0.0.1:${port}`,
      apiKey: 'k',
      backoff: { baseMs: 10 },
    });
    sb.channel('main');
    const side = sb.channel('side');
    const errors: unknown[] = [];
    side.on('error', (error) => errors.push(error));
    await side.ready();
    expect(side.state).toBe('subscribed');
    expect(side.epoch).toBe('e2');
    expect(errors).toEqual([]);
    expect(subscribes.map((data) => data['channel'])).toEqual(['side', 'side', 'side']);
    expect(urls).toHaveLength(1); // the socket stayed up: only the subscribe was repeated
  });

  it('drops repeated offsets, and resumes from the last offset it delivered', async () => {
    const frame = (n: number) => ({ event: 'n', data: n, 'system::offset': n });
    script = (socket, connection) => {
      const send = (value: unknown): void => socket.send(JSON.stringify(value));
      if (connection === 1) {
        send({ event: 'system::position', data: { channel: 'dup', epoch: 'e1', offset: 0, missed: 0 } });
        for (const n of [1, 2, 2, 1, 3]) send(frame(n));
        socket.close(4000, 'Server restarting, reconnect');
      } else {
        // The replay overlaps what the client had: 3 again, then 4 and 5.
        send({
          event: 'system::position',
          data: { channel: 'dup', epoch: 'e1', offset: 5, recovered: true, missed: 2 },
        });
        for (const n of [3, 4, 5]) send(frame(n));
      }
    };
    const { port } = server.address() as AddressInfo;
    const sb: Switchboard = newClient({
      url: `ws://127.0.0.1:${port}`,
      apiKey: 'k',
      backoff: { baseMs: 10 },
    });
    const room = sb.channel('dup');
    const seen = record(room);
    const recovered = nextEvent<[{ missed: number }]>(room, 'recovered');
    expect((await recovered)[0].missed).toBe(2);
    await waitFor('five', () => seen.length === 5, 5000);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(urls).toHaveLength(2);
    expect(urls[0]).toContain('recover=1');
    expect(urls[0]).not.toContain('since=');
    expect(urls[1]).toContain('since=3&epoch=e1');
  });
});
