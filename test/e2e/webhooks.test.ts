import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { DEFAULT_DISPATCHER_TIMING, createMemoryState, createMetrics } from '@switchboard/core';
import type { ApiKeyRecord, WebhookConfig } from '@switchboard/core';
import { startRedis, waitFor, WebhookReceiver } from '@switchboard/harness';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { ReceivedHook, RedisServer, WebhookEvent, WebhookVerifier } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';
import Pusher from 'pusher';
import { startNodeProcess, testKey } from './support-nodes';
import type { NodeProcess } from './support-nodes';

/** Webhooks end to end: real gateways, real Redis, a receiver that verifies with the Pusher SDK. */
const NODE_TIMEOUT_MS = 3000;
/** Retries (and key listing) fast enough for a test; the schedule's shape (full jitter, doubling) is unchanged. */
const FAST_RETRIES = { baseDelayMs: 20, maxDelayMs: 200, refreshMs: 100 };

let redis: RedisServer;
const gateways: TestGateway[] = [];
const processes: NodeProcess[] = [];
const clients: TestClient[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const node of processes.splice(0)) node.proc.kill('SIGKILL');
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  await Promise.all(receivers.splice(0).map((r) => r.down()));
});
afterAll(async () => {
  await redis.stop();
});

const prefix = (): string => `w${randomBytes(4).toString('hex')}`;

/** Verifies a request with the official Pusher SDK's webhook helper (key and HMAC-SHA256 of the raw body). */
function pusherVerifier(key: ApiKeyRecord): WebhookVerifier {
  // `cluster` only completes the options: verifying a webhook makes no request.
  const pusher = new Pusher({ appId: '1', key: key.key, secret: key.secret, cluster: 'mt1' });
  return (headers, rawBody) => {
    const webhook = pusher.webhook({ headers: headers as Record<string, string>, rawBody });
    const valid = webhook.isValid();
    return { valid, events: valid ? (webhook.getEvents() as unknown as WebhookEvent[]) : [] };
  };
}

async function receiverFor(key: ApiKeyRecord): Promise<WebhookReceiver> {
  const receiver = new WebhookReceiver({ verify: pusherVerifier(key) });
  receivers.push(receiver);
  await receiver.up();
  return receiver;
}

async function gatewayOn(env: Record<string, string>): Promise<TestGateway> {
  const gateway = await startGateway({ env, webhookTiming: FAST_RETRIES });
  gateways.push(gateway);
  return gateway;
}

async function client(url: string): Promise<TestClient> {
  const c = await connectClient(url);
  clients.push(c);
  return c;
}

/** A key with a webhook to `receiver`, stored through `gateway`'s engine. */
async function hookedKey(gateway: TestGateway, webhook: (r: WebhookReceiver) => WebhookConfig) {
  const key = await createTestKey(gateway.engine);
  const receiver = await receiverFor(key);
  const record = { ...key, webhook: webhook(receiver) };
  await gateway.engine.keys.put(record);
  return { key: record, receiver };
}

const names = (events: ReceivedHook['events']): string[] =>
  events.map((e) => `${e.name} ${e.channel}${e.user_id !== undefined ? ` ${e.user_id}` : ''}`);

describe('webhooks on Redis, two gateways', () => {
  it('sends one member_added and one member_removed for a user with tabs on both nodes and protocols, signed for the Pusher SDK', async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix() };
    const [a, b] = [await gatewayOn(env), await gatewayOn(env)];
    const { key, receiver } = await hookedKey(a, (r) => ({ url: r.url }));
    const tab1 = await client(a.wsUrl('/v4/room', { api_key: key.key, presence: '1', user: 'alice' }));
    await tab1.nextEvent('system::member_list');
    const tab2 = await client(b.wsUrl('/v3/room', { api_key: key.key, presence: '1', user: 'alice' }));
    await tab2.nextEvent('system:member_list');
    await waitFor('occupied and member_added', () => receiver.events().length >= 2, 5000);

    tab1.close();
    tab2.close();
    await waitFor('vacated and member_removed', () => receiver.events().length >= 4, 5000);
    expect(receiver.requests.every((r) => r.valid)).toBe(true);
    expect(names(receiver.events()).sort()).toEqual([
      'channel_occupied room',
      'channel_vacated room',
      'member_added room alice',
      'member_removed room alice',
    ]);
    const order = names(receiver.events());
    expect(order.indexOf('channel_occupied room')).toBeLessThan(order.indexOf('channel_vacated room'));
    expect(order.indexOf('member_added room alice')).toBeLessThan(order.indexOf('member_removed room alice'));
    await a.gateway.close();
    expect(receiver.events()).toHaveLength(4);
  });

  it("sends occupied/vacated and added/removed exactly for the true state's transitions, under random concurrent joins and leaves on both nodes (property)", async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix() };
    const nodes = [await gatewayOn(env), await gatewayOn(env)];
    const CHANNELS = ['c0', 'c1', 'c2'];
    /** One change of a burst: a join (presence when `user` is set) or the leave of an open connection. */
    const change = fc.record({
      leave: fc.boolean(),
      node: fc.integer({ min: 0, max: 1 }),
      channel: fc.integer({ min: 0, max: CHANNELS.length - 1 }),
      protocol: fc.constantFrom('v3' as const, 'v4' as const),
      user: fc.constantFrom(null, 'ann', 'bob'),
      pick: fc.nat(),
    });
    const bursts = fc.array(fc.array(change, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 7 });

    await fc.assert(
      fc.asyncProperty(bursts, async (plan) => {
        const { key, receiver } = await hookedKey(nodes[0]!, (r) => ({ url: r.url }));
        interface Conn {
          client: TestClient;
          channel: string;
          protocol: 'v3' | 'v4';
          user: string | null;
        }
        let open: Conn[] = [];
        // The true state's transitions, in order: per channel, and per channel and identity.
        const expected = new Map<string, string[]>();
        const note = (at: string, name: string): void => {
          expected.set(at, [...(expected.get(at) ?? []), name]);
        };
        const snapshot = (conns: Conn[]) => ({
          channels: new Map(CHANNELS.map((c) => [c, conns.filter((x) => x.channel === c).length])),
          identities: (ch: string, user: string) =>
            conns.filter((x) => x.channel === ch && x.user === user).length,
        });
        /** Waits until the cluster's counts and presence entries are the model's: the burst took effect. */
        const settled = async (): Promise<boolean> => {
          const counts = await nodes[0]!.engine.counts.list(key.key, 0, 100);
          const presence = await nodes[0]!.engine.presence.channels(key.key, {
            offset: 0,
            limit: 100,
            membersPerChannel: 0,
          });
          return CHANNELS.every((channel) => {
            const want = open.filter((x) => x.channel === channel);
            const have = counts.items.find((i) => i.channel === channel)?.count ?? 0;
            return (
              have === want.length &&
              (['v3', 'v4'] as const).every(
                (protocol) =>
                  (presence.channels.find((c) => c.channel === channel && c.protocol === protocol)?.count ??
                    0) === want.filter((x) => x.protocol === protocol && x.user !== null).length,
              )
            );
          });
        };
        const run = async (burst: (typeof plan)[number]): Promise<void> => {
          // Within a burst a channel only fills or only empties (its first change decides), so
          // its transitions do not depend on the order Redis applies the burst's concurrent changes.
          const direction = new Map<number, boolean>();
          for (const c of burst) if (!direction.has(c.channel)) direction.set(c.channel, c.leave);
          const before = open;
          const joins: Array<Promise<Conn>> = [];
          const leaving = new Set<Conn>();
          for (const c of burst) {
            if (direction.get(c.channel) !== c.leave) continue;
            const channel = CHANNELS[c.channel]!;
            if (c.leave) {
              const candidates = before.filter((x) => x.channel === channel && !leaving.has(x));
              if (candidates.length > 0) leaving.add(candidates[c.pick % candidates.length]!);
              continue;
            }
            const query: Record<string, string> = { api_key: key.key };
            if (c.user !== null) Object.assign(query, { presence: '1', user: c.user });
            joins.push(
              client(nodes[c.node]!.wsUrl(`/${c.protocol}/${channel}`, query)).then(async (opened) => {
                if (c.user !== null)
                  await opened.nextEvent(c.protocol === 'v4' ? 'system::member_list' : 'system:member_list');
                return { client: opened, channel, protocol: c.protocol, user: c.user };
              }),
            );
          }
          for (const x of leaving) x.client.close();
          const joined = await Promise.all(joins);
          open = [...before.filter((x) => !leaving.has(x)), ...joined];
          const was = snapshot(before);
          const now = snapshot(open);
          for (const channel of CHANNELS) {
            const [a, b] = [was.channels.get(channel)!, now.channels.get(channel)!];
            if (a === 0 && b > 0) note(channel, 'channel_occupied');
            if (a > 0 && b === 0) note(channel, 'channel_vacated');
            for (const user of ['ann', 'bob']) {
              const [m, n] = [was.identities(channel, user), now.identities(channel, user)];
              if (m === 0 && n > 0) note(`${channel} ${user}`, 'member_added');
              if (m > 0 && n === 0) note(`${channel} ${user}`, 'member_removed');
            }
          }
          await waitFor('the burst applied in Redis', settled, 5000);
        };
        for (const burst of plan) await run(burst);
        await run(
          open.map((x) => ({
            leave: true,
            node: 0,
            channel: CHANNELS.indexOf(x.channel),
            protocol: 'v4' as const,
            user: null,
            pick: 0,
          })),
        );
        const received = (): Map<string, string[]> => {
          const out = new Map<string, string[]>();
          for (const e of receiver.events()) {
            const at = e.user_id !== undefined ? `${e.channel} ${e.user_id}` : e.channel;
            out.set(at, [...(out.get(at) ?? []), e.name]);
          }
          return out;
        };
        const same = (): boolean =>
          JSON.stringify([...received()].sort()) === JSON.stringify([...expected].sort());
        // Every event was stored with its transition (settled above); once the queue is empty and
        // the receiver has them, nothing more can come.
        await waitFor(
          'every transition delivered',
          async () => same() && (await nodes[0]!.engine.webhooks.depth(key.key)) === 0,
          5000,
        ).catch(() => undefined);
        expect(await nodes[0]!.engine.webhooks.depth(key.key)).toBe(0);
        expect(Object.fromEntries([...received()].sort())).toEqual(Object.fromEntries([...expected].sort()));
        expect(receiver.requests.every((r) => r.valid)).toBe(true);
      }),
      { numRuns: 6, endOnFailure: true },
    );
  }, 60_000);
});

describe('kicks and drains', () => {
  it('send member_removed and channel_vacated once for kicked and drained connections', async () => {
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix(), DRAIN_GRACE_MS: '2000' };
    const [a, b] = [await gatewayOn(env), await gatewayOn(env)];
    const { key, receiver } = await hookedKey(a, (r) => ({ url: r.url }));
    const kicked = await client(a.wsUrl('/v4/k', { api_key: key.key, presence: '1', user: 'kim' }));
    await kicked.nextEvent('system::member_list');
    const drained = await client(b.wsUrl('/v4/d', { api_key: key.key, presence: '1', user: 'dan' }));
    await drained.nextEvent('system::member_list');
    await waitFor('the joins', () => receiver.events().length >= 4, 5000);

    const kick = await postJson(`${a.httpUrl}/api/v4/kick`, {
      key: key.key,
      secret: key.secret,
      user: 'kim',
    });
    expect(kick.status).toBe(200);
    await b.gateway.drain();
    await waitFor('the leaves', () => receiver.events().length >= 8, 5000);
    expect(names(receiver.events().slice(4)).sort()).toEqual([
      'channel_vacated d',
      'channel_vacated k',
      'member_removed d dan',
      'member_removed k kim',
    ]);
    await a.gateway.close();
    expect(receiver.events()).toHaveLength(8);
  });
});

describe('client events', () => {
  it('sends relayed client JSON messages with an event, and only the events the key lists (memory engine)', async () => {
    const gateway = await startGateway({ memoryState: createMemoryState(), webhookTiming: FAST_RETRIES });
    gateways.push(gateway);
    const { key, receiver } = await hookedKey(gateway, (r) => ({ url: r.url, events: ['client_event'] }));
    const sender = await client(
      gateway.wsUrl('/v3/chat', { api_key: key.key, presence: '1', user: 'erin', notify_self: '1' }),
    );
    await sender.nextEvent('system:member_list');
    sender.send({ event: 'typing', data: { on: true } });
    sender.send('plain text, not an event');
    sender.send({ event: 'said', data: 'hi' });
    await waitFor('two client events', () => receiver.events().length >= 2, 5000);
    const [typing, said] = receiver.events();
    expect(typing).toEqual({
      name: 'client_event',
      channel: 'chat',
      event: 'typing',
      data: { on: true },
      socket_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      user_id: 'erin',
    });
    expect(said).toMatchObject({ name: 'client_event', event: 'said', data: 'hi' });
    // No channel_occupied or member_added: the key lists client_event only.
    expect(receiver.events()).toHaveLength(2);
    expect(receiver.requests.every((r) => r.valid)).toBe(true);
  });
});

describe('a crashed gateway', () => {
  it("delivers its channels' member_removed and channel_vacated once, after the node timeout", async () => {
    const key = testKey();
    const receiver = await receiverFor(key);
    const env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix(),
      SWITCHBOARD_KEYS: JSON.stringify([
        { key: key.key, secret: key.secret, webhook: { url: receiver.url } },
      ]),
      NODE_TIMEOUT_MS: String(NODE_TIMEOUT_MS),
      HEARTBEAT_INTERVAL_MS: '500',
      LOG_LEVEL: 'info',
    };
    const start = async (): Promise<NodeProcess> => {
      const node = await startNodeProcess(env);
      processes.push(node);
      return node;
    };
    const [a, b] = [await start(), await start()];
    const stay = await client(a.wsUrl('/v4/stay', { api_key: key.key, presence: '1', user: 'bob' }));
    await stay.nextEvent('system::member_list');
    const doomed = await client(b.wsUrl('/v4/crash', { api_key: key.key, presence: '1', user: 'alice' }));
    await doomed.nextEvent('system::member_list');
    await waitFor('the joins', () => receiver.events().length >= 4, 5000);

    const killedAt = Date.now();
    b.proc.kill('SIGKILL');
    await waitFor('the crash events', () => receiver.events().length >= 6, NODE_TIMEOUT_MS + 3000);
    process.stdout.write(`crash webhooks: ${Date.now() - killedAt} ms after SIGKILL\n`);
    expect(names(receiver.events().slice(4)).sort()).toEqual([
      'channel_vacated crash',
      'member_removed crash alice',
    ]);
    // Whatever more arrives (there should be nothing), the crash events are not repeated.
    await stay.expectSilence(() => true, 1000);
    expect(names(receiver.events()).filter((n) => n.endsWith('crash') || n.endsWith('alice'))).toHaveLength(
      4,
    );
  });
});

describe('a dispatcher that dies mid-batch', () => {
  it('has its batch delivered by another gateway, under the same delivery id', async () => {
    const key = testKey();
    const receiver = await receiverFor(key);
    let failing = true;
    receiver.answer = () => (failing ? 500 : 200);
    const env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix(),
      SWITCHBOARD_KEYS: JSON.stringify([
        { key: key.key, secret: key.secret, webhook: { url: receiver.url } },
      ]),
    };
    const first = await startNodeProcess(env);
    processes.push(first);
    // Alone, the first node holds the key's lease and keeps retrying the batch.
    await client(first.wsUrl('/v4/batch', { api_key: key.key }));
    await waitFor('retries of the first node', () => receiver.requests.length >= 2, 5000);
    const delivery = receiver.requests[0]!.delivery;
    processes.push(await startNodeProcess(env));
    first.proc.kill('SIGKILL');
    await first.proc.exited;
    failing = false;
    await waitFor('the batch from the second node', () => receiver.accepted.length >= 1, 8000);
    expect(receiver.accepted[0]!.delivery).toBe(delivery);
    expect(names(receiver.accepted[0]!.events)).toEqual(['channel_occupied batch']);
  });
});

describe('an unavailable receiver', () => {
  it('gets every event after 15 s of refused connections and 15 s of 500s, in order per channel, each batch under one delivery id', async () => {
    const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
    // The documented backoff (DEFAULT_DISPATCHER_TIMING); only the key listing is faster.
    const gateway = await startGateway({
      env: { REDIS_URL: redis.url, REDIS_PREFIX: prefix() },
      metrics,
      webhookTiming: { refreshMs: 100 },
    });
    gateways.push(gateway);
    const { key, receiver } = await hookedKey(gateway, (r) => ({ url: r.url }));
    let failing = true;
    receiver.answer = () => (failing ? 500 : 200);
    const failedAttempts = async (): Promise<number> =>
      (await metrics.webhookDeliveries.get()).values.find((v) => v.labels['result'] === 'failed')?.value ?? 0;
    const expected = new Map<string, string[]>();
    const cycle = async (channel: string): Promise<void> => {
      const c = await client(gateway.wsUrl(`/v4/${channel}`, { api_key: key.key }));
      await waitFor('counted', async () => (await gateway.engine.counts.sum(key.key)) > 0, 2000);
      c.close();
      await waitFor('uncounted', async () => (await gateway.engine.counts.sum(key.key)) === 0, 2000);
      expected.set(channel, [...(expected.get(channel) ?? []), 'channel_occupied', 'channel_vacated']);
    };

    // Down: connections refused for 15 s, with events stored meanwhile.
    await receiver.down();
    const downAt = Date.now();
    await cycle('x');
    await cycle('y');
    await waitFor(
      '15 s of refused connections, retried',
      async () => Date.now() - downAt >= 15_000 && (await failedAttempts()) >= 3,
      20_000,
    );
    const refused = await failedAttempts();
    expect(receiver.requests).toHaveLength(0);

    // Up but failing: 500 for the next 15 s, and more events.
    await receiver.up();
    await cycle('x');
    await waitFor(
      '15 s of 500s, retried',
      () => Date.now() - downAt >= 30_000 && receiver.requests.some((r) => r.status === 500),
      20_000,
    );
    const upAt = Date.now();
    failing = false;
    const maxDelayMs = DEFAULT_DISPATCHER_TIMING.maxDelayMs;
    await waitFor(
      'every event, within the backoff cap',
      () => receiver.events().length >= 6,
      maxDelayMs + 5000,
    );
    process.stdout.write(
      `receiver down 30 s: ${refused} refused attempts, ${receiver.requests.filter((r) => r.status === 500).length} answered 500; every event ${Date.now() - upAt} ms after it answered 200\n`,
    );

    for (const [channel, sequence] of expected) {
      expect(
        receiver
          .events()
          .filter((e) => e.channel === channel)
          .map((e) => e.name),
      ).toEqual(sequence);
    }
    // Every retry of a batch carries the same delivery id and the same events.
    const byDelivery = new Map<string, string>();
    for (const request of receiver.requests) {
      const body = JSON.stringify(request.events);
      expect(byDelivery.get(request.delivery) ?? body).toBe(body);
      byDelivery.set(request.delivery, body);
    }
    const failed = receiver.requests.filter((r) => r.status === 500).map((r) => r.delivery);
    for (const id of failed) expect(receiver.accepted.map((r) => r.delivery)).toContain(id);
    expect(receiver.requests.every((r) => r.valid)).toBe(true);
    // Acknowledged once the 2xx reaches the dispatcher, just after the receiver recorded it.
    await waitFor('all acknowledged', async () => (await gateway.engine.webhooks.depth(key.key)) === 0, 2000);
  }, 90_000);

  it('drops and counts a batch after WEBHOOK_RETRY_SECONDS, and never slows publishing (memory engine)', async () => {
    const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
    const gateway = await startGateway({
      env: { WEBHOOK_RETRY_SECONDS: '1' },
      memoryState: createMemoryState(),
      metrics,
      webhookTiming: FAST_RETRIES,
    });
    gateways.push(gateway);
    const key = await createTestKey(gateway.engine);
    const receiver = await receiverFor(key);
    receiver.answer = () => 500;
    await gateway.engine.keys.put({ ...key, webhook: { url: receiver.url } });
    const listener = await client(gateway.wsUrl('/v3/busy', { api_key: key.key }));
    const started = Date.now();
    const published = await postJson(`${gateway.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'busy',
      message: 'still fast',
    });
    expect(published.status).toBe(200);
    await listener.next((f) => f.text.includes('still fast'));
    expect(Date.now() - started).toBeLessThan(500);
    const dropped = async (): Promise<number> =>
      (await metrics.webhookDroppedBatches.get()).values[0]?.value ?? 0;
    await waitFor('a dropped batch', async () => (await dropped()) === 1, 5000);
    expect(receiver.requests.length).toBeGreaterThan(1);
    expect(receiver.requests.every((r) => r.valid && r.events[0]?.name === 'channel_occupied')).toBe(true);
    await waitFor(
      'dropped from the queue',
      async () => (await gateway.engine.webhooks.depth(key.key)) === 0,
      2000,
    );
  });
});
