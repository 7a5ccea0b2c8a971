import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { waitFor } from '@switchboard/harness';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { ChurnFleet } from '../src/soak/fleet';
import type { Conn } from '../src/soak/fleet';

// The soak's verdicts compare the cluster's counts with the sockets this client says it holds,
// so its view must be exact: a socket is open from its 101 until the client or the server closed
// it, a kick is reported with its close code, a refused handshake never counts as open, and the
// server's pings are answered (else the idle timeout would close every long-lived socket).
describe('bench: the native churn-load client', () => {
  let node: TestGateway;
  let key: ApiKeyRecord;
  let fleet: ChurnFleet;
  const gone: { conn: Conn; code: number }[] = [];
  let openedAt = 0;

  beforeAll(async () => {
    node = await startGateway({ memoryState: createMemoryState(), env: { IDLE_TIMEOUT_SECONDS: '8' } });
    key = await createTestKey(node.engine);
    fleet = new ChurnFleet(2, [node.port]);
    fleet.onGone = (conn, code) => gone.push({ conn, code });
  });
  afterAll(async () => {
    fleet.stop();
    await node.close();
  });

  it('opens sockets, and the gateway counts exactly those', async () => {
    openedAt = Date.now();
    fleet.open({ key: key.key, protocol: 'v3', channel: 'a', node: 0 });
    fleet.open({ key: key.key, protocol: 'v4', channel: 'a', node: 0, user: 'alice' });
    fleet.open({ key: key.key, protocol: 'v4', channel: 'b', node: 0, user: 'alice' });
    fleet.open({ key: key.key, protocol: 'v4', channel: 'b', node: 0, user: 'bob' });
    expect(fleet.held(key.key)).toBe(4);
    await waitFor('4 sockets open', () => fleet.openList.length === 4);
    expect(fleet.opening).toBe(0);
    await waitFor('the gateway counts 4', async () => (await node.engine.counts.sum(key.key)) === 4);
    expect((await fleet.stats()).open).toBe(4);
  });

  it('reports a kick with 4509 on exactly the sockets it matched', async () => {
    const res = await postJson(`${node.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      user: 'alice',
    });
    expect(res.status).toBe(200);
    await waitFor('both of alice’s sockets kicked', () => gone.length === 2);
    expect(gone.map((g) => [g.conn.user, g.conn.channel, g.code]).sort()).toEqual([
      ['alice', 'a', 4509],
      ['alice', 'b', 4509],
    ]);
    expect(fleet.openList.map((c) => c.user ?? c.protocol).sort()).toEqual(['bob', 'v3']);
    expect(fleet.held(key.key)).toBe(2);
    expect(fleet.counters.gone).toEqual({ '4509': 2 });
  });

  it('answers the server’s pings, so sockets outlive the idle timeout', async () => {
    // Past the 8 s idle timeout since the sockets opened, with pings answered meanwhile.
    await waitFor(
      'the idle timeout passed, pings answered',
      async () => Date.now() - openedAt > 10_000 && (await fleet.stats()).pings >= 2,
      20_000,
    );
    expect(fleet.openList).toHaveLength(2);
    expect(gone).toHaveLength(2);
  }, 30_000);

  it('closes sockets from the client side, and the gateway counts none', async () => {
    fleet.closeAll();
    expect(fleet.openList).toHaveLength(0);
    expect(fleet.held(key.key)).toBe(0);
    expect(fleet.counters.closedByClient).toBe(2);
    await waitFor('the gateway counts 0', async () => (await node.engine.counts.sum(key.key)) === 0);
    expect((await fleet.stats()).open).toBe(0);
  });

  it('reports a refused handshake as a failure, never as open', async () => {
    fleet.open({ key: key.key, protocol: 'v3', channel: 'a/b/c', node: 0 });
    await waitFor('the open failed', () => fleet.counters.failed === 1 || fleet.openList.length > 0);
    expect(fleet.openList).toHaveLength(0);
    expect(Object.keys(fleet.counters.failures)).toEqual([
      expect.stringMatching(/^handshake refused: HTTP\/1\.1 404/),
    ]);
  });

  it('reports a socket the server closes after its 101 with that close code (4501: unknown key)', async () => {
    fleet.open({ key: 'no-such-key', protocol: 'v3', channel: 'a', node: 0 });
    await waitFor('closed by the server', () => gone.length === 3);
    expect(gone[2]).toMatchObject({ conn: { key: 'no-such-key' }, code: 4501 });
    expect(fleet.held('no-such-key')).toBe(0);
  });
});
