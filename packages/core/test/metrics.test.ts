import { Agent, request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DELIVERY_LATENCY_BUCKETS, createMetrics } from '../src/metrics/metrics';
import type { Metrics } from '../src/metrics/metrics';
import { startMetricsServer } from '../src/metrics/metrics-server';
import type { MetricsServer } from '../src/metrics/metrics-server';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(port: number, path: string, method = 'GET', agent?: Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, ...(agent ? { agent } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The value of one sample in Prometheus text format, matched by name and a subset of its labels. */
function sample(body: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of body.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const SWITCHBOARD_SERIES = [
  ['switchboard_connections', 'gauge'],
  ['switchboard_subscriptions', 'gauge'],
  ['switchboard_messages_in_total', 'counter'],
  ['switchboard_messages_out_total', 'counter'],
  ['switchboard_delivery_latency_seconds', 'histogram'],
  ['switchboard_redis_connected', 'gauge'],
  ['switchboard_redis_command_errors_total', 'counter'],
  ['switchboard_redis_reconnects_total', 'counter'],
  ['switchboard_kicks_total', 'counter'],
  ['switchboard_closes_total', 'counter'],
  ['switchboard_dropped_messages_total', 'counter'],
  ['switchboard_http_requests_total', 'counter'],
  ['switchboard_webhook_deliveries_total', 'counter'],
  ['switchboard_webhook_queue_depth', 'gauge'],
  ['switchboard_webhook_latency_seconds', 'histogram'],
  ['switchboard_webhook_dropped_batches_total', 'counter'],
  ['switchboard_history_trimmed_bytes_total', 'counter'],
] as const;

describe('metrics', () => {
  let metrics: Metrics;
  let server: MetricsServer;

  beforeEach(async () => {
    metrics = createMetrics({ service: 'gateway', nodeId: 'gw-test' });
    server = await startMetricsServer(metrics, 0, '127.0.0.1');
  });

  afterEach(async () => {
    await server.close();
  });

  it('serves every switchboard series and the default Node.js metrics on GET /metrics', async () => {
    const reply = await get(server.port, '/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const [name, type] of SWITCHBOARD_SERIES) {
      expect(reply.body).toContain(`# TYPE ${name} ${type}`);
      expect(reply.body).toMatch(new RegExp(`# HELP ${name} \\S`));
    }
    // Memory and CPU come from the default metrics (event-loop lag: the next test).
    expect(sample(reply.body, 'process_resident_memory_bytes')).toBeGreaterThan(1024 * 1024);
    expect(sample(reply.body, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    // Series exist at zero before any traffic, with the service and node labels on every sample.
    for (const protocol of ['v3', 'v4']) {
      const labels = { protocol, service: 'gateway', node_id: 'gw-test' };
      expect(sample(reply.body, 'switchboard_connections', labels)).toBe(0);
      expect(sample(reply.body, 'switchboard_subscriptions', labels)).toBe(0);
      for (const source of ['api', 'client']) {
        expect(sample(reply.body, 'switchboard_messages_in_total', { ...labels, source })).toBe(0);
        expect(sample(reply.body, 'switchboard_messages_out_total', { ...labels, source })).toBe(0);
      }
    }
    for (const kind of ['control', 'publication']) {
      expect(sample(reply.body, 'switchboard_dropped_messages_total', { kind })).toBe(0);
    }
  });

  it('shows a blocked event loop in the lag series', async () => {
    await get(server.port, '/metrics'); // each scrape starts a new lag window
    // The lag monitor samples every 10 ms on a libuv timer and measures from its previous sample (a
    // window starts with none): a longer timer fires after the monitor's next sample.
    await new Promise((resolve) => setTimeout(resolve, 25));
    const blockedUntil = Date.now() + 250;
    while (Date.now() < blockedUntil) {
      // a CPU-bound gateway: nothing else runs meanwhile
    }
    // The monitor's timer is overdue now; a timer set after it fires after it.
    await new Promise((resolve) => setTimeout(resolve, 1));
    const { body } = await get(server.port, '/metrics');
    expect(sample(body, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.2);
    expect(sample(body, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0.2);
    expect(sample(body, 'nodejs_eventloop_lag_max_seconds')).toBeLessThan(5);
    // The instantaneous lag is measured at the scrape, after the block: small but real.
    expect(sample(body, 'nodejs_eventloop_lag_seconds')).toBeGreaterThan(0);
    expect(sample(body, 'nodejs_eventloop_lag_seconds')).toBeLessThan(0.2);
  });

  it('reports the heap left by the latest full collection', async () => {
    // A full collection on demand, without starting the process with --expose-gc.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const retained = Array.from({ length: 20_000 }, (_, i) => ({ i, text: `kept-${i}` }));
    gc();
    // The observer hears of the collection in a later turn.
    let after = 0;
    for (let turn = 0; after === 0 && turn < 100; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      after = sample((await get(server.port, '/metrics')).body, 'switchboard_heap_used_after_gc_bytes') ?? 0;
    }
    const used = sample((await get(server.port, '/metrics')).body, 'nodejs_heap_size_used_bytes') ?? 0;
    // The live set after the collection, not a reading of the sawtooth: no more than used heap now.
    expect(after).toBeLessThanOrEqual(used);
    expect(after).toBeGreaterThan(1024 * 1024);
    expect(retained).toHaveLength(20_000);
  });

  it('reports values that move when the instruments are used', async () => {
    metrics.connections.inc({ protocol: 'v4' });
    metrics.connections.inc({ protocol: 'v4' });
    metrics.connections.inc({ protocol: 'v3' });
    metrics.connections.dec({ protocol: 'v4' });
    metrics.subscriptions.inc({ protocol: 'v4' }, 3);
    metrics.messagesIn.inc({ protocol: 'v3', source: 'api' });
    metrics.messagesOut.inc({ protocol: 'v3', source: 'api' }, 25);
    metrics.deliveryLatency.observe({ protocol: 'v3' }, 0.0003);
    metrics.deliveryLatency.observe({ protocol: 'v3' }, 0.2);
    metrics.redisConnected.set(1);
    metrics.redisCommandErrors.inc();
    metrics.redisReconnects.inc();
    metrics.kicks.inc({ protocol: 'v4' }, 2);
    metrics.closes.inc({ code: 4000 });
    metrics.closes.inc({ code: '4509' });
    metrics.httpRequests.inc({ route: '/api/publish', status: 200 });
    metrics.httpRequests.inc({ route: '/api/publish', status: 401 });
    metrics.droppedMessages.inc({ kind: 'control' }, 3);

    const { body } = await get(server.port, '/metrics');
    expect(sample(body, 'switchboard_connections', { protocol: 'v4' })).toBe(1);
    expect(sample(body, 'switchboard_connections', { protocol: 'v3' })).toBe(1);
    expect(sample(body, 'switchboard_subscriptions', { protocol: 'v4' })).toBe(3);
    expect(sample(body, 'switchboard_messages_in_total', { protocol: 'v3', source: 'api' })).toBe(1);
    expect(sample(body, 'switchboard_messages_in_total', { protocol: 'v3', source: 'client' })).toBe(0);
    expect(sample(body, 'switchboard_messages_out_total', { protocol: 'v3', source: 'api' })).toBe(25);
    expect(sample(body, 'switchboard_delivery_latency_seconds_count', { protocol: 'v3' })).toBe(2);
    expect(
      sample(body, 'switchboard_delivery_latency_seconds_bucket', { protocol: 'v3', le: '0.0001' }),
    ).toBe(0);
    expect(
      sample(body, 'switchboard_delivery_latency_seconds_bucket', { protocol: 'v3', le: '0.0005' }),
    ).toBe(1);
    expect(sample(body, 'switchboard_delivery_latency_seconds_bucket', { protocol: 'v3', le: '0.25' })).toBe(
      2,
    );
    expect(sample(body, 'switchboard_delivery_latency_seconds_bucket', { protocol: 'v3', le: '+Inf' })).toBe(
      2,
    );
    expect(sample(body, 'switchboard_redis_connected')).toBe(1);
    expect(sample(body, 'switchboard_redis_command_errors_total')).toBe(1);
    expect(sample(body, 'switchboard_redis_reconnects_total')).toBe(1);
    expect(sample(body, 'switchboard_kicks_total', { protocol: 'v4' })).toBe(2);
    expect(sample(body, 'switchboard_closes_total', { code: '4000' })).toBe(1);
    expect(sample(body, 'switchboard_closes_total', { code: '4509' })).toBe(1);
    expect(sample(body, 'switchboard_http_requests_total', { route: '/api/publish', status: '200' })).toBe(1);
    expect(sample(body, 'switchboard_http_requests_total', { route: '/api/publish', status: '401' })).toBe(1);
    expect(sample(body, 'switchboard_dropped_messages_total', { kind: 'control' })).toBe(3);
    expect(sample(body, 'switchboard_dropped_messages_total', { kind: 'publication' })).toBe(0);

    metrics.connections.dec({ protocol: 'v3' });
    const after = await get(server.port, '/metrics');
    expect(sample(after.body, 'switchboard_connections', { protocol: 'v3' })).toBe(0);
  });

  it('uses latency buckets from 0.1 ms to 1 s', () => {
    expect(DELIVERY_LATENCY_BUCKETS[0]).toBe(0.0001);
    expect(DELIVERY_LATENCY_BUCKETS[DELIVERY_LATENCY_BUCKETS.length - 1]).toBe(1);
    expect([...DELIVERY_LATENCY_BUCKETS].sort((a, b) => a - b)).toEqual(DELIVERY_LATENCY_BUCKETS);
  });

  it('answers 404 for other paths and 405 for other methods, and honours a query string', async () => {
    expect((await get(server.port, '/')).status).toBe(404);
    expect((await get(server.port, '/api/health')).status).toBe(404);
    expect((await get(server.port, '/metrics/extra')).status).toBe(404);
    const post = await get(server.port, '/metrics', 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    const head = await get(server.port, '/metrics', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect((await get(server.port, '/metrics?name[]=x')).status).toBe(200);
  });

  it('keeps a registry per instance, so two in one process do not collide', async () => {
    const other = createMetrics({ service: 'account-api', defaultMetrics: false });
    other.httpRequests.inc({ route: '/api/domains', status: 200 });
    const otherBody = await other.render();
    expect(sample(otherBody, 'switchboard_http_requests_total', { service: 'account-api' })).toBe(1);
    expect(otherBody).not.toContain('nodejs_eventloop_lag_seconds');
    const { body } = await get(server.port, '/metrics');
    expect(sample(body, 'switchboard_http_requests_total', { route: '/api/domains' })).toBeUndefined();
  });

  it('closes promptly even with a keep-alive scraper connected', async () => {
    const agent = new Agent({ keepAlive: true });
    expect((await get(server.port, '/metrics', 'GET', agent)).status).toBe(200);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(get(server.port, '/metrics')).rejects.toThrow();
    agent.destroy();
    server = await startMetricsServer(metrics, 0, '127.0.0.1'); // for afterEach
  });

  it('rejects when the port is taken', async () => {
    await expect(startMetricsServer(metrics, server.port, '127.0.0.1')).rejects.toThrow(/EADDRINUSE/);
  });
});
