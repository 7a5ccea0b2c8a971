import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { generateKeyRecord } from '../src/keys/key-store';
import { MemoryKeyStore } from '../src/keys/key-store-memory';
import { createLogger } from '../src/logger';
import type { ApiKey } from '../src/types';
import { WebhookDispatcher, batchBody } from '../src/webhooks/dispatcher';
import { MemoryWebhookQueue } from '../src/webhooks/webhooks-memory';
import type { QueuedEvent, WebhookQueue } from '../src/webhooks/webhooks';
import { waitFor } from '@switchboard/harness';

/** A queue that records the dispatcher's calls and can fail reads that acknowledge. */
class RecordingQueue implements WebhookQueue {
  readonly calls: Array<{ op: 'next' | 'ack'; acknowledged: string[]; read: string[] }> = [];
  /** Fails this many `next` calls that carry acknowledgements (a Redis failure). */
  failAcknowledgingReads = 0;
  onFailedRead: () => void = () => undefined;

  constructor(readonly inner: MemoryWebhookQueue) {}

  append: WebhookQueue['append'] = (key, event) => this.inner.append(key, event);
  lease: WebhookQueue['lease'] = (key, owner, ttlMs) => this.inner.lease(key, owner, ttlMs);
  depth: WebhookQueue['depth'] = (key) => this.inner.depth(key);

  async next(
    key: ApiKey,
    consumer: string,
    max: number,
    acknowledge: readonly string[] = [],
  ): Promise<QueuedEvent[]> {
    if (acknowledge.length > 0 && this.failAcknowledgingReads > 0) {
      this.failAcknowledgingReads -= 1;
      this.onFailedRead();
      throw new Error('Redis is away');
    }
    const read = await this.inner.next(key, consumer, max, acknowledge);
    if (acknowledge.length > 0 || read.length > 0)
      this.calls.push({ op: 'next', acknowledged: [...acknowledge], read: read.map((e) => e.id) });
    return read;
  }

  async ack(key: ApiKey, ids: readonly string[]): Promise<void> {
    this.calls.push({ op: 'ack', acknowledged: [...ids], read: [] });
    await this.inner.ack(key, ids);
  }
}

const quiet = createLogger(
  { level: 'error' },
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  }),
);

describe('WebhookDispatcher, queue calls and transport', () => {
  let server: Server;
  let bodies: string[];

  beforeEach(async () => {
    bodies = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const setUp = async (url?: string) => {
    const keys = new MemoryKeyStore();
    const queue = new RecordingQueue(new MemoryWebhookQueue((key) => keys.webhookEventsOf(key)));
    const port = (server.address() as AddressInfo).port;
    const record = { ...generateKeyRecord(), webhook: { url: url ?? `http://127.0.0.1:${port}/hooks` } };
    await keys.put(record);
    const dispatcher = new WebhookDispatcher({
      queue,
      keys,
      owner: 'gw-test',
      logger: quiet,
      retrySeconds: 60,
      timing: { refreshMs: 20, pollMs: 10, baseDelayMs: 10, maxDelayMs: 50 },
    });
    return { queue, record, dispatcher };
  };

  it('acknowledges each delivered batch with the read of the next one: one queue call per batch', async () => {
    const { queue, record, dispatcher } = await setUp();
    for (let i = 0; i < 250; i += 1)
      queue.inner.emit(record.key, { name: 'channel_occupied', channel: `c${i}` });
    dispatcher.start();
    try {
      await waitFor('every batch acknowledged', () => queue.calls.some((c) => c.acknowledged.length === 50));
    } finally {
      await dispatcher.stop();
    }
    expect(bodies).toHaveLength(3);
    expect(queue.calls.map((c) => [c.op, c.acknowledged.length, c.read.length])).toEqual([
      ['next', 0, 100],
      ['next', 100, 100],
      ['next', 100, 50],
      ['next', 50, 0],
    ]);
    // What a read acknowledges is exactly the batch it follows.
    expect(queue.calls[1]!.acknowledged).toEqual(queue.calls[0]!.read);
    expect(queue.calls[3]!.acknowledged).toEqual(queue.calls[2]!.read);
    expect(await queue.depth(record.key)).toBe(0);
  });

  it('keeps a delivered batch to acknowledge through a failed read, and acknowledges it when stopped', async () => {
    const { queue, record, dispatcher } = await setUp();
    queue.inner.emit(record.key, { name: 'member_added', channel: 'room', user_id: 'alice' });
    queue.failAcknowledgingReads = 2;
    const failed = new Promise<void>((resolve) => (queue.onFailedRead = resolve));
    dispatcher.start();
    await failed;
    await dispatcher.stop();
    expect(bodies).toHaveLength(1);
    expect(queue.calls.map((c) => [c.op, c.acknowledged])).toEqual([
      ['next', []],
      ['ack', ['1']],
    ]);
    expect(await queue.depth(record.key)).toBe(0);
  });

  it('builds the body around the stored JSON of the events, as JSON.stringify of the parsed events would', () => {
    const events = [
      { name: 'member_added', channel: 'room/1', user_id: '{"id":7}' },
      {
        name: 'client_event',
        channel: 'room',
        event: 'typing',
        data: { on: true, text: 'é\u2028' },
        socket_id: 'u1',
      },
    ];
    const batch = events.map((event, i) => ({ id: String(i), storedAt: 0, json: JSON.stringify(event) }));
    expect(batchBody(1700000000000, batch)).toBe(JSON.stringify({ time_ms: 1700000000000, events }));
    expect(batchBody(5, [])).toBe('{"time_ms":5,"events":[]}');
  });

  it('sends https: URLs over TLS, checking the certificate', async () => {
    const fixtures = join(__dirname, 'fixtures');
    const tls = createTlsServer(
      {
        key: readFileSync(join(fixtures, 'self-signed.key')),
        cert: readFileSync(join(fixtures, 'self-signed.crt')),
      },
      (_req, res) => res.writeHead(200).end(),
    );
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const port = (tls.address() as AddressInfo).port;
    const lines: Array<Record<string, unknown>> = [];
    const keys = new MemoryKeyStore();
    const queue = new MemoryWebhookQueue((key) => keys.webhookEventsOf(key));
    const record = { ...generateKeyRecord(), webhook: { url: `https://127.0.0.1:${port}/hooks` } };
    await keys.put(record);
    queue.emit(record.key, { name: 'channel_occupied', channel: 'room' });
    const dispatcher = new WebhookDispatcher({
      queue,
      keys,
      owner: 'gw-tls',
      logger: createLogger(
        { level: 'warn' },
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
            done();
          },
        }),
      ),
      retrySeconds: 60,
      timing: { refreshMs: 20, pollMs: 10, baseDelayMs: 10, maxDelayMs: 50 },
    });
    dispatcher.start();
    try {
      await waitFor('a failure logged', () => lines.length > 0);
      // The receiver's certificate is self-signed: the request failed in TLS, before any HTTP.
      expect(lines[0]).toMatchObject({
        msg: 'webhook delivery failed; retrying',
        problem: expect.stringMatching(/self[- ]signed/),
      });
      expect(await queue.depth(record.key)).toBe(1);
    } finally {
      await dispatcher.stop();
      tls.closeAllConnections();
      await new Promise<void>((resolve) => tls.close(() => resolve()));
    }
  });
});
