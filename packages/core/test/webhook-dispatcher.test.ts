import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Pusher from 'pusher';
import { generateKeyRecord } from '../src/keys/key-store';
import { MemoryKeyStore } from '../src/keys/key-store-memory';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics/metrics';
import { WebhookDispatcher } from '../src/webhooks/dispatcher';
import { MemoryWebhookQueue } from '../src/webhooks/webhooks-memory';
import { waitFor } from '@switchboard/harness';

interface Request {
  headers: IncomingHttpHeaders;
  body: string;
}

describe('WebhookDispatcher', () => {
  const keys = new MemoryKeyStore();
  const queue = new MemoryWebhookQueue((key) => keys.webhookEventsOf(key));
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
  let dispatcher: WebhookDispatcher;
  let server: Server;
  const requests: Request[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dispatcher = new WebhookDispatcher({
      queue,
      keys,
      owner: 'gw-test',
      logger,
      metrics,
      retrySeconds: 60,
      timing: { refreshMs: 20, pollMs: 10, baseDelayMs: 10, maxDelayMs: 50 },
    });
    dispatcher.start();
  });
  afterAll(async () => {
    await dispatcher.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends batches of at most 100 events, in order, signed with the key secret in Pusher headers', async () => {
    const port = (server.address() as AddressInfo).port;
    const record = { ...generateKeyRecord(), webhook: { url: `http://127.0.0.1:${port}/hooks` } };
    await keys.put(record);
    for (let i = 0; i < 250; i += 1) queue.emit(record.key, { name: 'channel_occupied', channel: `c${i}` });
    await waitFor('three requests', () => requests.length === 3);
    const bodies = requests.map(
      (r) => JSON.parse(r.body) as { time_ms: number; events: Array<{ channel: string }> },
    );
    expect(bodies.map((b) => b.events.length)).toEqual([100, 100, 50]);
    expect(bodies.flatMap((b) => b.events.map((e) => e.channel))).toEqual(
      Array.from({ length: 250 }, (_, i) => `c${i}`),
    );
    expect(bodies[0]!.time_ms).toBeGreaterThan(Date.now() - 10_000);
    for (const { headers, body } of requests) {
      expect(headers['content-type']).toBe('application/json');
      expect(headers['x-pusher-key']).toBe(record.key);
      expect(headers['x-pusher-signature']).toBe(
        createHmac('sha256', record.secret).update(body).digest('hex'),
      );
      expect(headers['x-switchboard-delivery']).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(new Set(requests.map((r) => r.headers['x-switchboard-delivery'])).size).toBe(3);
    for (let deadline = Date.now() + 2000; (await queue.depth(record.key)) > 0;) {
      if (Date.now() > deadline) throw new Error('the batches were not acknowledged');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  });

  it("never sends internal channels' events (names starting with '#'), and acknowledges them", async () => {
    const port = (server.address() as AddressInfo).port;
    const record = { ...generateKeyRecord(), webhook: { url: `http://127.0.0.1:${port}/internal` } };
    await keys.put(record);
    queue.emit(record.key, { name: 'member_added', channel: '#watchlist-ada', user_id: 'ada' });
    queue.emit(record.key, { name: 'channel_occupied', channel: '#server-to-user-ada' });
    queue.emit(record.key, { name: 'channel_occupied', channel: 'visible' });
    queue.emit(record.key, { name: 'member_removed', channel: '#watchlist-ada', user_id: 'ada' });
    await waitFor('the visible event', () => requests.some((r) => r.headers['x-pusher-key'] === record.key));
    const sent = requests.filter((r) => r.headers['x-pusher-key'] === record.key);
    expect(sent.flatMap((r) => (JSON.parse(r.body) as { events: unknown[] }).events)).toEqual([
      { name: 'channel_occupied', channel: 'visible' },
    ]);
    await waitFor('the internal events acknowledged', async () => (await queue.depth(record.key)) === 0);
  });

  it("delivers cache_miss and Pusher channels' events so the pusher SDK's webhook() helper verifies them", async () => {
    const port = (server.address() as AddressInfo).port;
    const record = generateKeyRecord({
      appId: '1234567',
      webhook: { url: `http://127.0.0.1:${port}/pusher`, events: ['cache_miss', 'client_event'] },
    });
    await keys.put(record);
    const events = [
      { name: 'cache_miss', channel: 'private-cache-prices' },
      {
        name: 'client_event',
        channel: 'presence-room',
        event: 'client-typing',
        data: '{"on":true}',
        socket_id: '123.456',
        user_id: '42',
      },
    ] as const;
    for (const event of events) queue.emit(record.key, event);
    await waitFor('the Pusher request', () => requests.some((r) => r.headers['x-pusher-key'] === record.key));
    const { headers, body } = requests.find((r) => r.headers['x-pusher-key'] === record.key)!;
    const pusher = new Pusher({
      appId: '1234567',
      key: record.key,
      secret: record.secret,
      host: '127.0.0.1',
    });
    const webhook = pusher.webhook({ headers: headers as Record<string, string>, rawBody: body });
    expect(webhook.isValid()).toBe(true);
    expect(webhook.getEvents()).toEqual(events);
  });

  it('reports an unreachable URL in the log and the metrics, and keeps the events', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const record = { ...generateKeyRecord(), webhook: { url: `http://127.0.0.1:${port}/gone` } };
    await keys.put(record);
    queue.emit(record.key, { name: 'member_added', channel: 'room', user_id: 'alice' });
    await waitFor('a failure logged', () =>
      lines.some((l) => l['msg'] === 'webhook delivery failed; retrying' && l['key'] === record.key),
    );
    const line = lines.find((l) => l['key'] === record.key)!;
    expect(line).toMatchObject({
      level: 40,
      url: record.webhook.url,
      problem: expect.stringMatching(/ECONNREFUSED/),
    });
    const failed = (await metrics.webhookDeliveries.get()).values.find(
      (v) => v.labels['result'] === 'failed',
    );
    expect(failed?.value).toBeGreaterThanOrEqual(1);
    expect(await queue.depth(record.key)).toBe(1);
  });

  it('drops a batch after the retry window: logged as an error, counted, removed from the queue', async () => {
    const dropKeys = new MemoryKeyStore();
    const dropQueue = new MemoryWebhookQueue((key) => dropKeys.webhookEventsOf(key));
    const dropMetrics = createMetrics({ service: 'gateway', defaultMetrics: false });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const record = { ...generateKeyRecord(), webhook: { url: `http://127.0.0.1:${port}/gone` } };
    await dropKeys.put(record);
    dropQueue.emit(record.key, { name: 'channel_vacated', channel: 'room' });
    const dropping = new WebhookDispatcher({
      queue: dropQueue,
      keys: dropKeys,
      owner: 'gw-drop',
      logger,
      metrics: dropMetrics,
      retrySeconds: 0.3,
      timing: { refreshMs: 20, pollMs: 10, baseDelayMs: 10, maxDelayMs: 50 },
    });
    dropping.start();
    try {
      await waitFor('the drop logged', () => lines.some((l) => l['key'] === record.key && l['level'] === 50));
      expect(lines.find((l) => l['key'] === record.key && l['level'] === 50)).toMatchObject({
        msg: 'webhook batch dropped: no 2xx answer within WEBHOOK_RETRY_SECONDS',
        events: 1,
        url: record.webhook.url,
      });
      expect((await dropMetrics.webhookDroppedBatches.get()).values[0]?.value).toBe(1);
      for (let deadline = Date.now() + 2000; (await dropQueue.depth(record.key)) > 0;) {
        if (Date.now() > deadline) throw new Error('the dropped batch stayed queued');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      await dropping.stop();
    }
  });
});
