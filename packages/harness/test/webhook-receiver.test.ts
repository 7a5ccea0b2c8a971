import { WebhookReceiver } from '../src/webhook-receiver';

// The one receiver serves the e2e suites (a verifier, every request kept) and the benchmark (no
// verifier, counts only): both uses, on a real HTTP server.

const post = (url: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

const batch = (...names: string[]): string =>
  JSON.stringify({ time_ms: 1, events: names.map((name) => ({ name, channel: 'c' })) });

describe('WebhookReceiver', () => {
  const receivers: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.down()));
  });
  const start = async (receiver: WebhookReceiver): Promise<WebhookReceiver> => {
    receivers.push(receiver);
    await receiver.up();
    return receiver;
  };

  it('without a verifier: accepts every batch, counts events by name and keeps each request', async () => {
    const receiver = await start(new WebhookReceiver());
    expect(
      (await post(receiver.url, batch('member_added', 'member_added'), { 'x-switchboard-delivery': 'd1' }))
        .status,
    ).toBe(200);
    expect((await post(receiver.url, 'not json')).status).toBe(200);
    expect(receiver.counts).toEqual({ requests: 2, events: 2, byName: { member_added: 2 }, malformed: 1 });
    expect(receiver.requests.map((r) => [r.delivery, r.valid, r.status, r.events.length])).toEqual([
      ['d1', true, 200, 2],
      ['', true, 200, 0],
    ]);
  });

  it('with record off: counts only (a benchmark receives millions of requests)', async () => {
    const receiver = await start(new WebhookReceiver({ record: false }));
    await post(receiver.url, batch('channel_occupied'));
    expect(receiver.counts.events).toBe(1);
    expect(receiver.requests).toEqual([]);
  });

  it("answers 401 to what the verifier rejects, and the answer function's status to the rest", async () => {
    const receiver = await start(
      new WebhookReceiver({
        verify: (headers, rawBody) =>
          headers['x-signature'] === 'ok'
            ? { valid: true, events: (JSON.parse(rawBody) as { events: [] }).events }
            : { valid: false, events: [] },
      }),
    );
    receiver.answer = () => 503;
    expect((await post(receiver.url, batch('a'), { 'x-signature': 'bad' })).status).toBe(401);
    expect(
      (await post(receiver.url, batch('b'), { 'x-signature': 'ok', 'x-switchboard-delivery': 'd2' })).status,
    ).toBe(503);
    receiver.answer = () => 200;
    expect(
      (await post(receiver.url, batch('b'), { 'x-signature': 'ok', 'x-switchboard-delivery': 'd2' })).status,
    ).toBe(200);
    expect(receiver.accepted.map((r) => r.delivery)).toEqual(['d2']);
    expect(receiver.events().map((e) => e.name)).toEqual(['b']);
  });

  it('refuses connections while down and listens on the same port once up again', async () => {
    const receiver = await start(new WebhookReceiver());
    const url = receiver.url;
    await receiver.down();
    await expect(post(url, batch('a'))).rejects.toThrow();
    await receiver.up();
    expect(receiver.url).toBe(url);
    expect((await post(url, batch('a'))).status).toBe(200);
  });
});
