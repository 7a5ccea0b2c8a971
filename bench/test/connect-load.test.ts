import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createMemoryState } from '@switchboard/core';
import { waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';
import type { ApiKeyRecord } from '@switchboard/core';
import { ClientFleet } from '../src/lib/fleet';
import { connectFleet, nativeFleet } from '../src/lib/native-fleet';
import type { ConnectFleet, NativeFleet } from '../src/lib/native-fleet';
import { nowUs } from '../src/lib/payload';

// The benchmark's join rates are only as true as the native client's counting: a join is a
// member list received, a refused handshake a failure, never a success.
describe('bench: the native connect-load client', () => {
  let node: TestGateway;
  let key: ApiKeyRecord;
  let fleet: ConnectFleet;
  const built: string[] = [];
  const observers: TestClient[] = [];

  beforeAll(async () => {
    node = await startGateway({ memoryState: createMemoryState() });
    key = await createTestKey(node.engine);
    fleet = connectFleet(2, (line) => built.push(line));
  });
  afterEach(async () => {
    await fleet.closeAll();
    for (const client of observers.splice(0)) client.close();
  });
  afterAll(async () => {
    fleet.stop();
    await node.close();
  });

  it('is built from source with the C compiler', () => {
    expect(built).toEqual([]);
    expect(fleet).not.toBeInstanceOf(ClientFleet);
  });

  it('counts a join when its member list arrives, and the channel sees each member join', async () => {
    const observer = await connectClient(
      node.wsUrl('/v4/room-0', { api_key: key.key, presence: '1', user: 'observer' }),
    );
    observers.push(observer);
    await observer.nextEvent('system::member_list');
    const urls = Array.from({ length: 9 }, (_, i) =>
      node.wsUrl('/v4/room-0', { api_key: key.key, presence: '1', user: `u${i}` }),
    );
    const summary = await fleet.connect(urls, { concurrency: 4, joinMarker: 'system::member_list' });
    expect(summary).toMatchObject({ ok: 9, failed: 0, joined: 9 });
    expect(summary.joinSeconds).toBeGreaterThan(0);
    const joinedUsers = new Set<unknown>();
    while (joinedUsers.size < 9) {
      const frame = await observer.nextEvent('system::member_joined');
      const { user } = (frame.json?.['data'] as { member: { user: unknown } }).member;
      if (user !== 'observer') joinedUsers.add(user);
    }
    expect([...joinedUsers].sort()).toEqual(Array.from({ length: 9 }, (_, i) => `u${i}`).sort());
  });

  it('opens without a marker, and a socket that is refused after its 101 opens but never joins', async () => {
    const plain = await fleet.connect([node.wsUrl('/v4/room-1', { api_key: key.key })], { concurrency: 1 });
    expect(plain).toMatchObject({ ok: 1, failed: 0 });
    const refused = await fleet.connect([node.wsUrl('/v4/room-1', { api_key: 'no-such-key-0000' })], {
      concurrency: 1,
      joinMarker: 'system::member_list',
    });
    expect(refused).toMatchObject({ ok: 1, joined: 0 });
  });

  it('reports a refused handshake as a failure, with the status line', async () => {
    const summary = await fleet.connect([`ws://127.0.0.1:${node.port}/not-a-channel-path/x/y`], {
      concurrency: 1,
    });
    expect(summary).toMatchObject({ ok: 0, failed: 1 });
    expect(summary.firstError).toMatch(/^handshake refused: HTTP\/1\.1 404/);
  });
});

// The scale scenario's commands: source addresses spread over 127.0.0.0/8, pongs that keep a
// socket past the server's idle timeout, and the arrival time of one marked frame on every socket.
describe('bench: the native connect-load client at scale', () => {
  let fleet: NativeFleet;
  let server: Server;
  let port: number;
  const sockets: Socket[] = [];
  const received: Buffer[][] = [];

  beforeAll(async () => {
    fleet = nativeFleet(2, () => undefined);
    // A bare upgrade server: the test decides every frame the clients receive.
    server = createServer();
    server.on('upgrade', (_request, socket: Socket) => {
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n',
      );
      const chunks: Buffer[] = [];
      received.push(chunks);
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await fleet.closeAll();
    await fleet.spreadSources(0);
    for (const socket of sockets.splice(0)) socket.destroy();
    received.splice(0);
  });
  afterAll(async () => {
    fleet.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  const urls = (n: number): string[] =>
    Array.from({ length: n }, (_, i) => `ws://127.0.0.1:${port}/v4/c${i}`);

  it('binds each worker to its own source addresses', async () => {
    await fleet.spreadSources(3);
    const summary = await fleet.connect(urls(12), { concurrency: 12 });
    expect(summary).toMatchObject({ ok: 12, failed: 0 });
    const sources = new Set(sockets.map((s) => s.remoteAddress));
    expect([...sources].sort()).toEqual(
      ['127.1.0.1', '127.1.0.2', '127.1.0.3', '127.2.0.1', '127.2.0.2', '127.2.0.3'].sort(),
    );
  });

  it('answers a ping with a masked pong carrying its payload', async () => {
    await fleet.connect(urls(1), { concurrency: 1 });
    // A text frame first, then the ping, in one write: the parser walks frame boundaries.
    sockets[0]!.write(
      Buffer.concat([
        Buffer.from([0x81, 0x03]),
        Buffer.from('abc'),
        Buffer.from([0x89, 0x04]),
        Buffer.from('ping'),
      ]),
    );
    await waitFor('the pong', () => Buffer.concat(received[0]!).length >= 10);
    expect(Buffer.concat(received[0]!)).toEqual(
      Buffer.from([0x8a, 0x84, 0, 0, 0, 0, ...Buffer.from('ping')]),
    );
  });

  it('reports when the watched marker reached each socket, and the sockets the server closed', async () => {
    await fleet.connect(urls(6), { concurrency: 6 });
    expect(await fleet.watch('mark-1')).toBe(6);
    const since = nowUs();
    sockets[5]!.destroy();
    const frame = (text: string): Buffer =>
      Buffer.concat([Buffer.from([0x81, text.length]), Buffer.from(text)]);
    // A frame without the marker is not a delivery; the first frame holding it is.
    for (const socket of sockets.slice(0, 5)) socket.write(frame('other'));
    for (const socket of sockets.slice(0, 5))
      socket.write(Buffer.concat([frame('x mark-1 y'), frame('mark-1')]));
    const report = await fleet.deliveries(since, 10_000);
    expect(report).toMatchObject({ open: 5, seen: 5, dropped: 1 });
    expect(report.us).toHaveLength(5);
    expect(report.us.every((us, i) => us >= 0 && (i === 0 || us >= report.us[i - 1]!))).toBe(true);
    // A watch starts over: the old marker's arrivals are gone until the new one arrives.
    expect(await fleet.watch('mark-2')).toBe(5);
    const none = await fleet.deliveries(nowUs(), 50);
    expect(none).toMatchObject({ open: 5, seen: 0, us: [] });
  });
});

describe('bench: one publish to every socket through a gateway', () => {
  it('is seen by every subscriber of the channel', async () => {
    const node = await startGateway({ memoryState: createMemoryState() });
    const key = await createTestKey(node.engine);
    const fleet = nativeFleet(2, () => undefined);
    try {
      await fleet.spreadSources(2);
      const subscribers = Array.from({ length: 20 }, () => node.wsUrl('/v4/all', { api_key: key.key }));
      expect(await fleet.connect(subscribers, { concurrency: 20 })).toMatchObject({ ok: 20, failed: 0 });
      expect(await fleet.watch('marker-7f3a')).toBe(20);
      // The gateway subscribes a socket in its open handler: all 20 are subscribed by now.
      const since = nowUs();
      const published = await postJson(`${node.httpUrl}/api/v4/publish`, {
        key: key.key,
        secret: key.secret,
        channel: 'all',
        message: 'hello marker-7f3a',
      });
      expect(published.status).toBe(200);
      const report = await fleet.deliveries(since, 10_000);
      expect(report).toMatchObject({ open: 20, seen: 20, dropped: 0 });
    } finally {
      await fleet.closeAll();
      fleet.stop();
      await node.close();
    }
  });
});
