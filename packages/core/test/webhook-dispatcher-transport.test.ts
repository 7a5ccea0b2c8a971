import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { generateKeyRecord } from '../src/keys/key-store';
import type { ApiKeyRecord } from '../src/keys/key-store';
import { MemoryKeyStore } from '../src/keys/key-store-memory';
import { createLogger } from '../src/logger';
import { createMetrics } from '../src/metrics/metrics';
import type { Metrics } from '../src/metrics/metrics';
import { WebhookDispatcher } from '../src/webhooks/dispatcher';
import type { WebhookDispatcherOptions } from '../src/webhooks/dispatcher';
import { MemoryWebhookQueue } from '../src/webhooks/webhooks-memory';
import { waitFor } from '@switchboard/harness';

/** A real receiver that counts the sockets open on its side. */
class Receiver {
  readonly server: Server;
  open = 0;
  connections = 0;
  /**
   * Connections made before the first one closed: what a pool opened at most at once. (Counting
   * open sockets later is racy here: a socket the client has just closed and the one it opens
   * next can reach the server in either order.)
   */
  beforeFirstClose: number | undefined;
  requests = 0;

  constructor(handle: (req: IncomingMessage, res: ServerResponse) => void) {
    this.server = createServer((req, res) => {
      this.requests += 1;
      req.resume();
      req.on('end', () => handle(req, res));
    });
    this.server.on('connection', (socket: Socket) => {
      this.connections += 1;
      this.open += 1;
      socket.on('close', () => {
        this.beforeFirstClose ??= this.connections;
        this.open -= 1;
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A dispatcher over a memory queue, its warnings and errors collected. */
function setup(options: Partial<WebhookDispatcherOptions> = {}) {
  const keys = new MemoryKeyStore();
  const queue = new MemoryWebhookQueue((key) => keys.webhookEventsOf(key));
  const lines: Array<Record<string, unknown>> = [];
  const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
  const dispatcher = new WebhookDispatcher({
    queue,
    keys,
    owner: 'gw-transport',
    logger: createLogger(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    ),
    metrics,
    retrySeconds: 60,
    ...options,
    timing: { refreshMs: 20, pollMs: 10, baseDelayMs: 10, maxDelayMs: 50, ...options.timing },
  });
  const problems = (): unknown[] => lines.filter((l) => 'problem' in l).map((l) => l.problem);
  return { keys, queue, lines, metrics, dispatcher, problems };
}

async function gauge(metrics: Metrics): Promise<number> {
  return (await metrics.webhookQueueDepth.get()).values[0]?.value ?? 0;
}

describe('WebhookDispatcher transport', () => {
  const receivers: Receiver[] = [];
  const dispatchers: WebhookDispatcher[] = [];
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  const receiver = (handle: (req: IncomingMessage, res: ServerResponse) => void): Receiver => {
    const r = new Receiver(handle);
    receivers.push(r);
    return r;
  };
  const started = (s: ReturnType<typeof setup>): ReturnType<typeof setup> => {
    dispatchers.push(s.dispatcher);
    s.dispatcher.start();
    return s;
  };

  it('fails a batch whose 200 answer never ends after the deadline, closes its socket, and opens at most the connection limit', async () => {
    // Answers 200 at once, then holds the body open for ever.
    const slow = receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const url = await slow.listen();
    const s = started(setup({ timing: { timeoutMs: 300, connectionsPerReceiver: 2 } }));
    // Five keys share the receiver: five batches want a connection at once.
    const records: ApiKeyRecord[] = [];
    for (let i = 0; i < 5; i++) {
      const record = { ...generateKeyRecord(), webhook: { url: `${url}/hooks` } };
      records.push(record);
      await s.keys.put(record);
      s.queue.emit(record.key, { name: 'channel_occupied', channel: `room${i}` });
    }
    await waitFor('every key failed twice', () => s.problems().length >= 10, 15_000);
    expect(s.problems()).toContain('no complete answer within 300 ms');
    expect(s.problems().every((p) => p === 'no complete answer within 300 ms')).toBe(true);
    // Retried, never acknowledged: at-least-once.
    for (const record of records) expect(await s.queue.depth(record.key)).toBe(1);
    expect(slow.beforeFirstClose).toBe(2);
    // Each timed-out request had its connection closed: a new one for each retry.
    expect(slow.connections).toBeGreaterThanOrEqual(10);

    // The webhooks are removed: no more requests, and no socket is left open on the receiver.
    const withoutWebhook = ({ webhook: _webhook, ...rest }: ApiKeyRecord): ApiKeyRecord => rest;
    for (const record of records) await s.keys.put(withoutWebhook(record));
    await waitFor('every socket closed', () => slow.open === 0);
  });

  it('keeps one connection for batch after batch when the receiver answers whole', async () => {
    const fast = receiver((_req, res) => res.writeHead(200).end('ok'));
    const url = await fast.listen();
    const s = started(setup());
    const record = { ...generateKeyRecord(), webhook: { url: `${url}/hooks` } };
    await s.keys.put(record);
    for (let i = 0; i < 5; i++) {
      s.queue.emit(record.key, { name: 'channel_occupied', channel: `room${i}` });
      const before = fast.requests;
      await waitFor('the batch delivered', () => fast.requests > before);
    }
    await waitFor('all acknowledged', async () => (await s.queue.depth(record.key)) === 0);
    expect(fast.connections).toBe(1);
    expect(s.problems()).toEqual([]);
  });

  it('fails a 2xx whose body is over the answer size cap, and closes that connection', async () => {
    const chatty = receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('x'.repeat(64 * 1024));
    });
    const url = await chatty.listen();
    const s = started(setup({ timing: { maxResponseBytes: 1024 } }));
    const record = { ...generateKeyRecord(), webhook: { url: `${url}/hooks` } };
    await s.keys.put(record);
    s.queue.emit(record.key, { name: 'channel_occupied', channel: 'room' });
    await waitFor('two failures', () => s.problems().length >= 2);
    expect(s.problems()[0]).toBe('answer longer than 1024 bytes');
    expect(await s.queue.depth(record.key)).toBe(1);
    expect(chatty.connections).toBeGreaterThanOrEqual(2);
  });

  it('with denyPrivate, connects to no private address: literal or resolved at connect time', async () => {
    const inside = receiver((_req, res) => res.writeHead(200).end());
    const url = new URL(await inside.listen());
    const s = started(setup({ denyPrivate: true }));
    // A literal is refused before connecting; a name (here localhost, as a rebound name would
    // be) on the address it resolves to when the connection is made.
    const literal = { ...generateKeyRecord(), webhook: { url: `http://127.0.0.1:${url.port}/hooks` } };
    const named = { ...generateKeyRecord(), webhook: { url: `http://localhost:${url.port}/hooks` } };
    for (const record of [literal, named]) {
      await s.keys.put(record);
      s.queue.emit(record.key, { name: 'channel_occupied', channel: 'room' });
    }
    const failed = (key: string) => s.lines.filter((l) => l.key === key && 'problem' in l);
    await waitFor(
      'both refused twice',
      () => failed(literal.key).length >= 2 && failed(named.key).length >= 2,
    );
    expect(failed(literal.key)[0]?.problem).toMatch(
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback, link-local or private address \(WEBHOOK_DENY_PRIVATE\)/,
    );
    expect(failed(named.key)[0]?.problem).toMatch(
      /localhost resolves to (127\.0\.0\.1|::1), a loopback, link-local or private address/,
    );
    expect(inside.connections).toBe(0);
    expect(await s.queue.depth(named.key)).toBe(1);
  });

  it('shows the backlog growing in switchboard_webhook_queue_depth during a receiver outage', async () => {
    const down = receiver((_req, res) => res.writeHead(503).end());
    const url = await down.listen();
    // A long backoff: the worker sleeps between attempts while events keep coming.
    const s = started(setup({ timing: { baseDelayMs: 60_000, maxDelayMs: 60_000 } }));
    const record = { ...generateKeyRecord(), webhook: { url: `${url}/hooks` } };
    await s.keys.put(record);
    s.queue.emit(record.key, { name: 'channel_occupied', channel: 'first' });
    await waitFor('the first attempt failed', () => s.problems().length === 1);
    expect(s.problems()[0]).toBe('HTTP 503');
    for (let i = 0; i < 50; i++) s.queue.emit(record.key, { name: 'channel_occupied', channel: `c${i}` });
    await waitFor('the gauge shows 51', async () => (await gauge(s.metrics)) === 51);
    for (let i = 0; i < 49; i++) s.queue.emit(record.key, { name: 'channel_occupied', channel: `d${i}` });
    await waitFor('the gauge shows 100', async () => (await gauge(s.metrics)) === 100);
    expect(down.requests).toBe(1);
  });

  it('has the queue apply its limits to each key it holds, each refresh', async () => {
    const keys = new MemoryKeyStore();
    const inner = new MemoryWebhookQueue((key) => keys.webhookEventsOf(key));
    const enforced: string[] = [];
    // The memory queue applies its limits at every write; a Redis queue needs the call.
    const queue = Object.assign(Object.create(inner) as MemoryWebhookQueue, {
      enforceLimits: async (key: string): Promise<void> => {
        enforced.push(key);
      },
    });
    const down = receiver((_req, res) => res.writeHead(503).end());
    const url = await down.listen();
    const s = started(setup({ keys, queue }));
    const record = { ...generateKeyRecord(), webhook: { url: `${url}/hooks` } };
    await keys.put(record);
    inner.emit(record.key, { name: 'channel_occupied', channel: 'room' });
    await waitFor(
      'limits applied while the batch is retried',
      () => s.problems().length > 0 && enforced.length >= 3,
    );
    expect(new Set(enforced)).toEqual(new Set([record.key]));
  });

  it('counts and logs the events a full queue drops', async () => {
    const keys = new MemoryKeyStore();
    const queue = new MemoryWebhookQueue(
      (key) => keys.webhookEventsOf(key),
      Date.now,
      () => true,
      { maxEvents: 3, maxBytes: 1024 * 1024 },
    );
    const s = setup({ keys, queue, timing: { refreshMs: 60_000 } });
    dispatchers.push(s.dispatcher);
    const record = { ...generateKeyRecord(), webhook: { url: 'http://192.0.2.1/hooks' } };
    await keys.put(record);
    for (let i = 0; i < 10; i++) queue.emit(record.key, { name: 'channel_occupied', channel: `c${i}` });
    expect((await s.metrics.webhookDroppedEvents.get()).values[0]?.value).toBe(7);
    const warned = s.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('webhook queue full'));
    // Logged once per key and interval, not once per event.
    expect(warned).toEqual([expect.objectContaining({ key: record.key, events: 1 })]);
  });
});
