import { createMemoryState } from '@switchboard/core';
import { rawRequest, UPGRADE_HEADERS } from '@switchboard/harness';
import { createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';

/**
 * Every X-Forwarded-For line a request carries is read, in order, as Node joins them: a proxy
 * such as HAProxy (`option forwardfor`) appends its own line after any line the client wrote, so
 * the first line is the client's choice and must not decide its address (docs/security.md).
 */
const running: TestGateway[] = [];
const start = async (env: Record<string, string>): Promise<TestGateway> => {
  const node = await startGateway({
    memoryState: createMemoryState(),
    env: { TRUSTED_PROXIES: '127.0.0.1,::1', ...env },
  });
  running.push(node);
  return node;
};
afterAll(() => Promise.all(running.map((node) => node.close())));

/** A publish whose first X-Forwarded-For line says `claimed` and whose second (the proxy's) says `real`. */
const publish = (node: TestGateway, claimed: string, real: string, key: string, secret: string) =>
  rawRequest({
    port: node.port,
    requestLine: 'POST /api/publish HTTP/1.1',
    headers: ['Content-Type: application/json', `X-Forwarded-For: ${claimed}`, `X-Forwarded-For: ${real}`],
    body: JSON.stringify({ key, secret, channel: 'c', message: 'm' }),
  });

describe('X-Forwarded-For on several header lines', () => {
  it('limits failed authentications by the proxy’s entry, whatever the client wrote on its own line', async () => {
    const node = await start({ AUTH_FAILURES_PER_ADDRESS: '3' });
    const key = await createTestKey(node.engine);
    for (let i = 1; i <= 3; i++) {
      expect((await publish(node, `192.0.2.${i}`, '198.51.100.7', key.key, 'wrong-secret')).status).toBe(401);
    }
    const refused = await publish(node, '192.0.2.50', '198.51.100.7', key.key, key.secret);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'SB_AUTH_RATE_LIMITED' });
    // The client's own line cannot get another address locked out either.
    expect((await publish(node, '198.51.100.7', '198.51.100.8', key.key, key.secret)).status).toBe(200);
  });

  it('joins the lines in order and takes the rightmost entry that is not a trusted proxy', async () => {
    const node = await start({ AUTH_FAILURES_PER_ADDRESS: '1', TRUSTED_PROXIES: '127.0.0.1,::1,10.0.0.0/8' });
    const key = await createTestKey(node.engine);
    // Second line: the real client, then an inner proxy of 10/8 that appended to the same line.
    expect((await publish(node, '192.0.2.1', '198.51.100.9, 10.0.0.2', key.key, 'wrong')).status).toBe(401);
    expect((await publish(node, '192.0.2.2', '198.51.100.9, 10.0.0.3', key.key, key.secret)).status).toBe(
      429,
    );
    expect((await publish(node, '198.51.100.9', '192.0.2.3', key.key, key.secret)).status).toBe(200);
  });

  it('limits new connections per address by the proxy’s entry (NEW_CONNECTIONS_PER_SECOND_PER_IP)', async () => {
    const node = await start({ NEW_CONNECTIONS_PER_SECOND_PER_IP: '3' });
    const key = await createTestKey(node.engine);
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const reply = await rawRequest({
        port: node.port,
        requestLine: `GET /v3/room?api_key=${key.key} HTTP/1.1`,
        headers: [...UPGRADE_HEADERS, `X-Forwarded-For: 192.0.2.${i}`, 'X-Forwarded-For: 198.51.100.7'],
      });
      statuses.push(reply.status);
    }
    // Fixed one-second windows: the 10 attempts span at most this many of them.
    const windows = Math.floor((Date.now() - started) / 1000) + 2;
    const accepted = statuses.filter((status) => status === 101).length;
    expect(accepted).toBeLessThanOrEqual(3 * windows);
    expect(accepted).toBeLessThan(10);
    expect(statuses.filter((status) => status !== 101).every((status) => status === 429)).toBe(true);
  });
});

describe('cluster API response headers', () => {
  it('answers JSON with X-Content-Type-Options: nosniff, errors included', async () => {
    const node = await start({});
    const key = await createTestKey(node.engine);
    const ok = await publish(node, '192.0.2.1', '198.51.100.1', key.key, key.secret);
    const denied = await publish(node, '192.0.2.1', '198.51.100.1', key.key, 'wrong');
    const missing = await rawRequest({
      port: node.port,
      requestLine: 'GET /api/nothing HTTP/1.1',
      headers: [],
    });
    expect([ok.status, denied.status, missing.status]).toEqual([200, 401, 404]);
    for (const reply of [ok, denied, missing]) {
      expect(reply.headers['content-type']).toBe('application/json');
      expect(reply.headers['x-content-type-options']).toBe('nosniff');
    }
  });
});
