import { createMemoryState } from '@switchboard/core';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';
import type { ApiKeyRecord } from '@switchboard/core';
import { ClientFleet } from '../src/lib/fleet';
import { connectFleet } from '../src/lib/native-fleet';
import type { ConnectFleet } from '../src/lib/native-fleet';

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
