import { createMemoryState, createMetrics } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';

/** The gateway's Prometheus series move with connections, messages, kicks and closes. */
it('records connections, subscriptions, messages, latency, kicks, closes and HTTP requests', async () => {
  const metrics = createMetrics({ service: 'gateway', nodeId: 'n1', defaultMetrics: false });
  const node = await startGateway({ memoryState: createMemoryState(), metrics });
  const value = async (name: string, labels: Record<string, string> = {}): Promise<number> => {
    const values = (await metrics.registry.getMetricsAsJSON()).flatMap((m) =>
      m.values.map((v) => ({ ...v, name: (v as { metricName?: string }).metricName ?? m.name })),
    );
    const match = values.filter(
      (v) => v.name === name && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
    );
    return match.reduce((sum, v) => sum + v.value, 0);
  };
  try {
    const key = await createTestKey(node.engine);
    const a = await connectClient(node.wsUrl('/v4/m', { api_key: key.key }));
    const b = await connectClient(node.wsUrl('/v4/m', { api_key: key.key }));
    a.send({ event: 'system::subscribe', data: { channel: 'side' } });
    await a.nextEvent('system::subscribe_success');
    expect(await value('switchboard_connections', { protocol: 'v4' })).toBe(2);
    expect(await value('switchboard_subscriptions', { protocol: 'v4' })).toBe(3);

    await postJson(`${node.httpUrl}/api/v4/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'm',
      message: 'x',
    });
    await a.next((f) => f.text === 'x');
    b.send('from-b');
    await a.next((f) => f.text === 'from-b');
    expect(await value('switchboard_messages_in_total', { protocol: 'v4', source: 'api' })).toBe(1);
    expect(await value('switchboard_messages_in_total', { protocol: 'v4', source: 'client' })).toBe(1);
    expect(await value('switchboard_messages_out_total', { protocol: 'v4', source: 'api' })).toBe(2);
    expect(await value('switchboard_messages_out_total', { protocol: 'v4', source: 'client' })).toBe(1);
    expect(await value('switchboard_delivery_latency_seconds_count', { protocol: 'v4' })).toBe(2);
    expect(await value('switchboard_http_requests_total', { route: '/api/v4/publish', status: '200' })).toBe(
      1,
    );

    await postJson(`${node.httpUrl}/api/kick`, { key: key.key, secret: key.secret });
    await a.closed;
    await b.closed;
    expect(await value('switchboard_kicks_total', { protocol: 'v4' })).toBe(2);
    expect(await value('switchboard_closes_total', { code: '4509' })).toBe(2);
    expect(await value('switchboard_connections', { protocol: 'v4' })).toBe(0);
    expect(await value('switchboard_subscriptions', { protocol: 'v4' })).toBe(0);
  } finally {
    await node.close();
  }
});

/** A client picks its own close code; the `code` label only takes the catalog's and the standard ones. */
it('labels closes with codes outside the error catalog as other', async () => {
  const metrics = createMetrics({ service: 'gateway', nodeId: 'n1', defaultMetrics: false });
  const node = await startGateway({ memoryState: createMemoryState(), metrics });
  const series = async (): Promise<Record<string, number>> => {
    const closes = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'switchboard_closes_total',
    );
    return Object.fromEntries((closes?.values ?? []).map((v) => [String(v.labels['code']), v.value]));
  };
  try {
    const key = await createTestKey(node.engine);
    const codes = [1000, 4123, 4321, 4999, 4509, 4000];
    for (const code of codes) {
      const client = await connectClient(node.wsUrl('/v4/m', { api_key: key.key }));
      client.socket.close(code);
      await client.closed;
    }
    const deadline = Date.now() + 5000;
    while (Object.values(await series()).reduce((a, b) => a + b, 0) < codes.length) {
      if (Date.now() > deadline) throw new Error(`closes not all counted: ${JSON.stringify(await series())}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await series()).toEqual({ '1000': 1, '4000': 1, '4509': 1, other: 3 });
  } finally {
    await node.close();
  }
});

/** Bytes a channel's history drops for `HISTORY_MAX_BYTES_PER_CHANNEL` are counted. */
it('counts the bytes history drops for its byte cap', async () => {
  const metrics = createMetrics({ service: 'gateway', nodeId: 'n1', defaultMetrics: false });
  const node = await startGateway({
    memoryState: createMemoryState(),
    metrics,
    env: { HISTORY_MAX_BYTES_PER_CHANNEL: '2048' },
  });
  const trimmed = async (): Promise<number> =>
    (await metrics.registry.getMetricsAsJSON())
      .find((m) => m.name === 'switchboard_history_trimmed_bytes_total')
      ?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
  try {
    const key = await createTestKey(node.engine);
    const publish = (message: string) =>
      postJson(`${node.httpUrl}/api/publish`, { key: key.key, secret: key.secret, channel: 'big', message });
    await publish('a'.repeat(1000));
    expect(await trimmed()).toBe(0);
    await publish('b'.repeat(1000));
    // Two entries of 1,000 characters and their metadata pass 2,048 bytes: the first is dropped.
    expect(await trimmed()).toBeGreaterThanOrEqual(1000);
  } finally {
    await node.close();
  }
});
