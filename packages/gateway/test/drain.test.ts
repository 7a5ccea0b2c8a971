import { createMemoryState } from '@switchboard/core';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import { createApiHandler } from '../src/api/router';

describe('drain', () => {
  it('reports draining, closes every socket with 4000 in batches, and stops accepting', async () => {
    const node = await startGateway({ memoryState: createMemoryState(), env: { DRAIN_BATCH_SIZE: '2' } });
    const key = await createTestKey(node.engine);
    const clients = await Promise.all(
      [1, 2, 3, 4, 5].map(() => connectClient(node.wsUrl('/v3/d', { api_key: key.key }))),
    );
    const api = createApiHandler(node.gateway.context);
    const draining = node.gateway.drain();
    const health = await api({
      method: 'GET',
      path: '/api/health',
      query: '',
      headers: {},
      remoteAddress: () => '127.0.0.1',
      body: Buffer.alloc(0),
    });
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'draining' });
    for (const client of clients)
      expect(await client.closed).toEqual({ code: 4000, reason: 'Server restarting, reconnect' });
    await draining;
    await expect(connectClient(node.wsUrl('/v3/d', { api_key: key.key }))).rejects.toThrow();
    await node.close();
  });
});
