import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Pusher from 'pusher';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { parseQuery, verifySignedRequest } from '@switchboard/gateway';
import { payload } from '../src/lib/payload';
import { publishAtRate } from '../src/lib/publish-loop';
import {
  benchDelivery,
  channelAuth,
  eventBody,
  signedPath,
  splitSubscription,
} from '../src/lib/pusher-protocol';
import { PusherSubscriber } from '../src/lib/pusher-subscriber';

// The Pusher load client of the benchmark against tiny local servers (not Soketi): its handshake
// and frames, what it says when a server does not speak Pusher, and the signature of its
// publishes, checked by the product's own verifier and against the `pusher` server SDK.

const KEY = 'bench-key';
const SECRET = 'bench-secret-123';

type Behaviour = 'pusher' | 'silent' | 'error';

/** A minimal Pusher server: established, subscription_succeeded, then one delivery and a ping. */
async function pusherServer(
  behaviour: Behaviour,
): Promise<{ port: number; frames: string[]; close(): Promise<void> }> {
  const frames: string[] = [];
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: `/app/${KEY}` });
  wss.on('connection', (ws: WebSocket) => {
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      frames.push(text);
      const frame = JSON.parse(text) as { event: string; data: { channel: string } };
      if (frame.event !== 'pusher:subscribe') return;
      const channel = frame.data.channel;
      ws.send(JSON.stringify({ event: 'pusher_internal:subscription_succeeded', channel, data: '{}' }));
      ws.send(JSON.stringify({ event: 'bench', channel, data: payload(42) }));
      ws.send(JSON.stringify({ event: 'pusher:ping', data: {} }));
    });
    if (behaviour === 'pusher')
      ws.send(
        JSON.stringify({
          event: 'pusher:connection_established',
          data: JSON.stringify({ socket_id: '123.456', activity_timeout: 30 }),
        }),
      );
    else if (behaviour === 'error')
      ws.send(JSON.stringify({ event: 'pusher:error', data: { code: 4001, message: 'App key not in use' } }));
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  return {
    port: (wss.address() as AddressInfo).port,
    frames,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}

interface Outcome {
  error?: string;
  deliveries: { t: number; seq: number }[];
  subscriber: PusherSubscriber;
}

function subscribe(
  port: number,
  channel: string,
  client: 'raw' | 'ws',
  timeoutMs = 5000,
  path = `/app/${KEY}`,
  credentials?: { key: string; secret: string; userId: string },
): Promise<Outcome> {
  return new Promise((resolve) => {
    const deliveries: { t: number; seq: number }[] = [];
    const subscriber: PusherSubscriber = new PusherSubscriber(
      `ws://127.0.0.1:${port}${path}?protocol=7#${encodeURIComponent(channel)}`,
      {
        settled: (error) => resolve({ ...(error ? { error } : {}), deliveries, subscriber }),
        delivery: (t, seq) => deliveries.push({ t, seq }),
        closed: () => undefined,
      },
      { client, timeoutMs, ...(credentials ? { credentials } : {}) },
    );
  });
}

describe('bench: the Pusher load client', () => {
  it('reads the publish time and sequence out of a delivery frame, and nothing out of other frames', () => {
    const data = payload(1234);
    const t = Number(JSON.parse(data).t);
    const frame = Buffer.from(JSON.stringify({ event: 'bench', channel: 'c', data }));
    expect(benchDelivery(frame)).toEqual({ t, seq: 1234 });
    // Soketi orders the keys differently: the marker is found wherever `data` is.
    expect(benchDelivery(Buffer.from(JSON.stringify({ data, channel: 'c', event: 'bench' })))).toEqual({
      t,
      seq: 1234,
    });
    expect(benchDelivery(Buffer.from('{"event":"pusher:pong","data":{}}'))).toBeUndefined();
    expect(splitSubscription('ws://h:1/app/k?protocol=7#presence-a%23b')).toEqual({
      url: 'ws://h:1/app/k?protocol=7',
      channel: 'presence-a#b',
    });
  });

  it.each(['raw', 'ws'] as const)(
    'subscribes after connection_established, counts the delivery and answers pusher:ping (%s client)',
    async (client) => {
      const server = await pusherServer('pusher');
      try {
        const outcome = await subscribe(server.port, 'fan-0', client);
        expect(outcome.error).toBeUndefined();
        expect(outcome.subscriber.socketId).toBe('123.456');
        expect(outcome.subscriber.activityTimeoutS).toBe(30);
        // The delivery and the ping follow the subscription: wait for the pong.
        const deadline = Date.now() + 5000;
        while (!server.frames.some((f) => f.includes('pusher:pong')) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 10));
        expect(server.frames[0]).toBe('{"event":"pusher:subscribe","data":{"channel":"fan-0"}}');
        expect(server.frames).toContain('{"event":"pusher:pong","data":{}}');
        expect(outcome.deliveries.map((d) => d.seq)).toEqual([42]);
        outcome.subscriber.terminate();
      } finally {
        await server.close();
      }
    },
  );

  it('signs a presence subscription as the pusher SDK authorizes it, and refuses to go on without credentials', async () => {
    const server = await pusherServer('pusher');
    try {
      const credentials = { key: KEY, secret: SECRET, userId: 'u-1' };
      const outcome = await subscribe(server.port, 'presence-room', 'raw', 5000, `/app/${KEY}`, credentials);
      expect(outcome.error).toBeUndefined();
      outcome.subscriber.terminate();
      const sdk = new Pusher({ appId: 'app-1', key: KEY, secret: SECRET, host: '127.0.0.1' });
      const expected = sdk.authorizeChannel('123.456', 'presence-room', { user_id: 'u-1' });
      expect(JSON.parse(server.frames[0]!)).toEqual({
        event: 'pusher:subscribe',
        data: { channel: 'presence-room', ...expected },
      });
      expect(channelAuth(KEY, SECRET, '123.456', 'private-x', 'u-1')).toEqual(
        sdk.authorizeChannel('123.456', 'private-x'),
      );
      const unsigned = await subscribe(server.port, 'presence-room', 'raw');
      expect(unsigned.error).toBe("presence-room needs the app's credentials to sign its subscription");
    } finally {
      await server.close();
    }
  });

  it('fails with a message naming the missing handshake when the server says nothing', async () => {
    const server = await pusherServer('silent');
    try {
      const outcome = await subscribe(server.port, 'c', 'raw', 300);
      expect(outcome.error).toMatch(
        /no pusher:connection_established within 300 ms .*does the server speak the Pusher protocol/,
      );
    } finally {
      await server.close();
    }
  });

  it('fails with the server answer when the upgrade is refused, and with a pusher:error', async () => {
    const server = await pusherServer('error');
    try {
      const refused = await subscribe(server.port, 'c', 'raw', 5000, '/app/other-key');
      expect(refused.error).toMatch(/handshake refused: HTTP\/1.1 400/);
      const error = await subscribe(server.port, 'c', 'raw');
      expect(error.error).toBe('pusher:error 4001: App key not in use');
    } finally {
      await server.close();
    }
  });
});

describe('bench: Pusher HTTP API publishes', () => {
  let server: Server;
  let port: number;
  const seen: { url: string; body: string }[] = [];
  const refusals: string[] = [];

  beforeAll(async () => {
    // Verifies each request with the product's verifier and, like Soketi, closes every connection
    // after its answer (the publisher must open another).
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const url = req.url ?? '';
        seen.push({ url, body });
        const [path = '', query = ''] = url.split('?');
        const params = parseQuery(query);
        const problem =
          params instanceof Map
            ? verifySignedRequest(
                { method: req.method ?? '', path, params, body },
                { key: KEY, secret: SECRET, appId: 'app-1' },
                path.split('/')[2] ?? '',
              )
            : params;
        if (problem) refusals.push(JSON.stringify(problem));
        res.writeHead(problem ? 401 : 200, { 'Content-Type': 'application/json', Connection: 'close' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
    refusals.length = 0;
  });

  it('signs each event as Pusher does, and opens a new connection when the server closes one', async () => {
    const result = await publishAtRate({
      targets: [{ host: '127.0.0.1', port }],
      path: '/apps/app-1/events',
      key: KEY,
      secret: SECRET,
      channels: ['a', 'b'],
      rate: 40,
      durationMs: 250,
      stopAfterMs: 1000,
      connections: 2,
      format: 'pusher',
    });
    expect(refusals).toEqual([]);
    expect(result).toMatchObject({ sent: 10, ok: 10, failed: 0 });
    const bodies = seen.map((s) => JSON.parse(s.body) as { name: string; channel: string; data: string });
    expect(bodies.map((b) => b.channel)).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
    expect(bodies.every((b) => b.name === 'bench' && benchDelivery(Buffer.from(JSON.stringify(b))))).toBe(
      true,
    );
  });

  it('computes the same signature as the pusher server SDK for the same request', async () => {
    const sdk = new Pusher({
      appId: 'app-1',
      key: KEY,
      secret: SECRET,
      host: '127.0.0.1',
      port: String(port),
      useTLS: false,
    });
    await sdk.trigger('orders', 'shipped', { id: 1 });
    expect(refusals).toEqual([]);
    const { url, body } = seen[0]!;
    const [path = '', query = ''] = url.split('?');
    const params = new URLSearchParams(query);
    const ours = signedPath('POST', path, KEY, SECRET, body, Number(params.get('auth_timestamp')));
    expect(new URLSearchParams(ours.split('?')[1]).get('auth_signature')).toBe(params.get('auth_signature'));
    // And the bench's own body is what the SDK would send for a string payload.
    expect(JSON.parse(eventBody('orders', 'x'))).toEqual({ name: 'bench', channel: 'orders', data: 'x' });
  });
});

describe('bench: batched Pusher publishes', () => {
  let server: Server;
  let port: number;
  const seen: { url: string; body: string }[] = [];
  const refusals: string[] = [];

  beforeAll(async () => {
    // Keep-alive, and slow to answer (20 ms): publishes fall due while the one connection is busy,
    // and the next request must carry them together.
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const url = req.url ?? '';
        seen.push({ url, body });
        const [path = '', query = ''] = url.split('?');
        const params = parseQuery(query);
        const problem =
          params instanceof Map
            ? verifySignedRequest(
                { method: req.method ?? '', path, params, body },
                { key: KEY, secret: SECRET, appId: 'app-1' },
                path.split('/')[2] ?? '',
              )
            : params;
        if (problem) refusals.push(JSON.stringify(problem));
        setTimeout(() => {
          // Content-Length, as uWS answers (the bench's client reads no chunked bodies).
          res.writeHead(problem ? 401 : 200, { 'Content-Type': 'application/json', 'Content-Length': '2' });
          res.end('{}');
        }, 20);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('carries the publishes due meanwhile in one signed batch_events request, at most 10 each', async () => {
    const result = await publishAtRate({
      targets: [{ host: '127.0.0.1', port }],
      path: '/apps/app-1/events',
      key: KEY,
      secret: SECRET,
      channels: ['a', 'b', 'c'],
      rate: 400,
      durationMs: 250,
      stopAfterMs: 2000,
      connections: 1,
      format: 'pusher',
      batch: 10,
    });
    expect(refusals).toEqual([]);
    expect(result).toMatchObject({ sent: 100, ok: 100, failed: 0 });
    // One request in flight at a time, each 20 ms or more: far fewer requests than publishes.
    expect(result.requests).toBe(seen.length);
    expect(result.requests).toBeLessThan(40);
    const events: { name: string; channel: string; data: string }[] = [];
    for (const { url, body } of seen) {
      const parsed = JSON.parse(body) as { batch?: { name: string; channel: string; data: string }[] };
      const batch = parsed.batch ?? [];
      // A request of one is a batch of one (the path decides the body's shape, not the count).
      expect(url.split('?')[0]).toBe('/apps/app-1/batch_events');
      expect(batch.length).toBeGreaterThanOrEqual(1);
      expect(batch.length).toBeLessThanOrEqual(10);
      events.push(...batch);
    }
    expect(Math.max(...seen.map((s) => (JSON.parse(s.body) as { batch: unknown[] }).batch.length))).toBe(10);
    // Every publish once, in order, round-robin over the channels, each with its own send time.
    expect(events.map((e) => e.channel)).toEqual(
      Array.from({ length: 100 }, (_, i) => ['a', 'b', 'c'][i % 3]),
    );
    expect(events.map((e) => benchDelivery(Buffer.from(JSON.stringify(e)))?.seq)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
  });
});
