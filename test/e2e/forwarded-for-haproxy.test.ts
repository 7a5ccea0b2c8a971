import { createMemoryState } from '@switchboard/core';
import { freePort, rawRequest, startHaproxy, UPGRADE_HEADERS, waitFor } from '@switchboard/harness';
import { createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import type { RunningHaproxy } from '@switchboard/harness';

/**
 * A client behind the shipped deploy/haproxy.cfg cannot choose its address by writing its own
 * X-Forwarded-For line: HAProxy's `option forwardfor` appends a line of its own after it, and the
 * gateway reads every line (docs/security.md, "Client addresses"). Clients act from their own
 * loopback addresses (127.0.0.5, 127.0.0.6: any 127/8 address is local on Linux); HAProxy reaches
 * the gateway from 127.0.0.1, its only trusted proxy.
 *
 * Needs `haproxy` (Debian package `haproxy`; .ci/run installs it). Without it the suite fails.
 */
jest.setTimeout(30_000);

const ATTACKER = '127.0.0.5';
const OWNER = '127.0.0.6';

const gateways: TestGateway[] = [];
const balancers: RunningHaproxy[] = [];

afterAll(async () => {
  for (const haproxy of balancers) await haproxy.close();
  for (const gateway of gateways) await gateway.close();
});

/** A gateway trusting 127.0.0.1 and HAProxy (shipped config) in front of it, seen UP. */
async function balanced(env: Record<string, string>): Promise<{ gateway: TestGateway; port: number }> {
  const gateway = await startGateway({
    memoryState: createMemoryState(),
    env: { TRUSTED_PROXIES: '127.0.0.1', ...env },
  });
  gateways.push(gateway);
  const haproxy = await startHaproxy({
    listenPort: await freePort(),
    backends: [{ name: 'gw1', port: gateway.port }],
    checkIntervalMs: 100,
  });
  balancers.push(haproxy);
  await waitFor('haproxy sees gw1 UP', async () => (await haproxy.servers())[0]?.status === 'UP', 10_000, 50);
  return { gateway, port: haproxy.port };
}

describe('X-Forwarded-For through HAProxy (deploy/haproxy.cfg)', () => {
  it('counts failed authentications against the real client address, not one the client wrote', async () => {
    const { gateway, port } = await balanced({ AUTH_FAILURES_PER_ADDRESS: '3' });
    const key = await createTestKey(gateway.engine);
    const publish = (from: string, claimed: string | undefined, secret: string) =>
      rawRequest({
        port,
        localAddress: from,
        requestLine: 'POST /api/publish HTTP/1.1',
        headers: ['Content-Type: application/json', ...(claimed ? [`X-Forwarded-For: ${claimed}`] : [])],
        body: JSON.stringify({ key: key.key, secret, channel: 'c', message: 'm' }),
      }).then((reply) => reply.status);

    // A new made-up address on every request: before, the gateway believed it and never refused.
    const statuses: number[] = [];
    for (let i = 1; i <= 10; i++) statuses.push(await publish(ATTACKER, `203.0.113.${i}`, 'wrong-secret'));
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
    expect(await publish(ATTACKER, OWNER, key.secret)).toBe(429);
    // Claiming the owner's address did not lock the owner out.
    expect(await publish(OWNER, undefined, key.secret)).toBe(200);
    expect(await publish(OWNER, ATTACKER, key.secret)).toBe(200);
  });

  it('limits WebSocket upgrades by the real client address (NEW_CONNECTIONS_PER_SECOND_PER_IP)', async () => {
    const { gateway, port } = await balanced({ NEW_CONNECTIONS_PER_SECOND_PER_IP: '3' });
    const key = await createTestKey(gateway.engine);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const reply = await rawRequest({
        port,
        localAddress: ATTACKER,
        requestLine: `GET /v3/room?api_key=${key.key} HTTP/1.1`,
        headers: [...UPGRADE_HEADERS, `X-Forwarded-For: 203.0.113.${i}`],
      });
      statuses.push(reply.status);
    }
    // Fixed one-second windows: the attempts span at most this many of them.
    const windows = Math.floor((Date.now() - started) / 1000) + 2;
    const accepted = statuses.filter((status) => status === 101).length;
    expect(accepted).toBeLessThanOrEqual(3 * windows);
    expect(accepted).toBeLessThan(10);
    expect(statuses.filter((status) => status !== 101).every((status) => status === 429)).toBe(true);
    // Another client is not limited by the attacker's upgrades.
    const other = await rawRequest({
      port,
      localAddress: OWNER,
      requestLine: `GET /v3/room?api_key=${key.key} HTTP/1.1`,
      headers: [...UPGRADE_HEADERS, `X-Forwarded-For: ${ATTACKER}`],
    });
    expect(other.status).toBe(101);
  });
});
