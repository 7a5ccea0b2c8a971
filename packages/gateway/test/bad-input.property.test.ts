/**
 * Bad input, generated (docs/openapi.yaml, docs/protocol.md): REST bodies to every cluster API endpoint and frames on
 * V3 and V4 sockets. Every REST answer is a 4xx (or a 200 when the input happens to be valid)
 * with `{"success":false,"error":…}`, never a 5xx or a dropped connection; every frame gets the
 * relay or the error frame the protocol defines; and the node keeps serving throughout.
 *
 * The per-connection message rate is raised for this node: the properties send thousands of
 * frames on a few sockets, and the 4029 limit has its own tests.
 */
import fc from 'fast-check';
import { CHANNEL_NAME_RULE, HTTP_ERRORS, createMemoryState, isValidChannelName } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, startGateway } from '@switchboard/testing';
import type { Received, TestClient, TestGateway } from '@switchboard/testing';

const RUNS = 50;
const LIMIT = 64 * 1024;

const ENDPOINTS = [
  '/api/publish',
  '/api/v4/publish',
  '/api/members',
  '/api/v4/members',
  '/api/kick',
  '/api/v4/kick',
] as const;
type Endpoint = (typeof ENDPOINTS)[number];

let node: TestGateway;
/** REST fuzzing authenticates with this key; it has no sockets, so fuzzed kicks hit nobody. */
let restKey: ApiKeyRecord;
/** Sockets of the delivery checks and of the frame properties. */
let wsKey: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  node = await startGateway({
    memoryState: createMemoryState(),
    env: { CLIENT_MESSAGES_PER_SECOND: '1000000' },
  });
  restKey = await createTestKey(node.engine);
  wsKey = await createTestKey(node.engine);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(() => node.close());

const open = async (path: string, query: Record<string, string> = {}): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(path, { api_key: wsKey.key, ...query }));
  clients.push(client);
  return client;
};

// ---------------------------------------------------------------------------------------------
// REST
// ---------------------------------------------------------------------------------------------

interface Reply {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
}

async function send(path: string, body?: string | Uint8Array, method = 'POST'): Promise<Reply> {
  const response = await fetch(`${node.httpUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

const postBody = (path: string, body: unknown): Promise<Reply> => send(path, JSON.stringify(body));

/**
 * The envelope every answer must have: 200 `{"success":true,…}`, or a 4xx
 * `{"success":false,"error":"<non-empty text>","code":<catalog code>}`. Returns the parsed body.
 */
function expectEnvelope(reply: Reply): Record<string, unknown> {
  expect(reply.status === 200 || (reply.status >= 400 && reply.status < 500)).toBe(true);
  const body = JSON.parse(reply.text) as Record<string, unknown>;
  if (reply.status === 200) {
    expect(body['success']).toBe(true);
    return body;
  }
  expect(body['success']).toBe(false);
  expect(typeof body['error']).toBe('string');
  expect((body['error'] as string).length).toBeGreaterThan(0);
  const code = body['code'] as keyof typeof HTTP_ERRORS;
  expect(Object.keys(HTTP_ERRORS)).toContain(code);
  expect(HTTP_ERRORS[code].status).toBe(reply.status);
  return body;
}

/** A 400 that names the offending field, as docs/errors.md promises. */
function expectFieldError(reply: Reply, field: string): void {
  const body = expectEnvelope(reply);
  expect(reply.status).toBe(400);
  expect(body['error']).toContain(`"${field}"`);
}

const json = fc.jsonValue({ maxDepth: 3 });
/** Any JSON value but a string (and not null, which means "absent"). */
const notString = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.array(json, { maxLength: 3 }),
  fc.dictionary(fc.string(), json, { maxKeys: 3 }),
);
const tooLong = (max: number) => fc.integer({ min: max + 1, max: max + 300 }).map((n) => 'x'.repeat(n));
const invalidChannel = fc.oneof(
  notString,
  fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !isValidChannelName(s)),
  fc.integer({ min: 129, max: 400 }).map((n) => 'a'.repeat(n)),
);
const isPositiveIntLike = (v: unknown): boolean =>
  (typeof v === 'number' && Number.isInteger(v) && v >= 1) ||
  (typeof v === 'string' && /^-?\d+$/.test(v.trim()) && Number(v) >= 1);
const badPositiveInt = fc
  .oneof(notString, fc.string({ maxLength: 8 }), fc.integer({ max: 0 }).map(String))
  .filter((v) => !isPositiveIntLike(v));
const badPaginate = fc
  .oneof(notString, fc.string({ maxLength: 5 }))
  .filter((v) => ![0, 1, true, false, '0', '1'].includes(v as never));

function validBody(endpoint: Endpoint): Record<string, unknown> {
  const credentials = { key: restKey.key, secret: restKey.secret };
  switch (endpoint) {
    case '/api/publish':
    case '/api/v4/publish':
      return { ...credentials, channel: 'fuzz-rest', message: { event: 'e', data: 1 } };
    case '/api/v4/members':
      return { ...credentials, channel: 'fuzz-rest', paginate: 1 };
    case '/api/v4/kick':
      return { ...credentials, uuid: 'nobody-has-this-uuid' };
    default:
      return credentials;
  }
}

/** Per endpoint: each field and values of the wrong type or form for it. */
const WRONG: Record<Endpoint, Array<[field: string, values: fc.Arbitrary<unknown>]>> = {
  '/api/publish': [],
  '/api/v4/publish': [],
  '/api/members': [],
  '/api/v4/members': [],
  '/api/kick': [],
  '/api/v4/kick': [],
};
for (const endpoint of ENDPOINTS) {
  WRONG[endpoint].push(
    ['key', fc.oneof(notString, fc.constant(''))],
    ['secret', fc.oneof(notString, fc.constant(''))],
  );
}
for (const endpoint of [
  '/api/publish',
  '/api/v4/publish',
  '/api/v4/members',
  '/api/members',
  '/api/v4/kick',
] as const) {
  for (const alias of ['channel', 'channelId', 'roomId']) WRONG[endpoint].push([alias, invalidChannel]);
}
WRONG['/api/v4/members'].push(['paginate', badPaginate], ['page', badPositiveInt], ['limit', badPositiveInt]);
WRONG['/api/kick'].push(['reason', fc.oneof(notString, tooLong(1024))]);
for (const forbidden of ['uuid', 'user', 'channel', 'channelId', 'roomId'])
  WRONG['/api/kick'].push([forbidden, fc.jsonValue()]);
WRONG['/api/v4/kick'].push(
  ['reason', fc.oneof(notString, tooLong(1024))],
  ['uuid', fc.oneof(notString, tooLong(256))],
  ['user', fc.oneof(notString, tooLong(1024))],
);

const wrongField = fc
  .constantFrom(...ENDPOINTS)
  .chain((endpoint) =>
    fc
      .constantFrom(...WRONG[endpoint])
      .chain(([field, values]) => values.map((value) => ({ endpoint, field, value }))),
  );

describe('cluster API bodies', () => {
  it('answers arbitrary JSON bodies with the envelope, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), fc.jsonValue(), async (endpoint, body) => {
        expectEnvelope(await postBody(endpoint, body));
      }),
      { numRuns: RUNS },
    );
  });

  it('answers bodies mixing valid and arbitrary fields with the envelope; field errors name a field', async () => {
    const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
    const body = fc.record({
      key: maybe(fc.oneof(fc.constant(restKey.key), json)),
      secret: maybe(fc.oneof(fc.constant(restKey.secret), json)),
      channel: maybe(fc.oneof(fc.constant('fuzz-rest'), fc.string(), json)),
      channelId: maybe(fc.oneof(fc.constant('fuzz-rest'), json)),
      roomId: maybe(fc.oneof(fc.constant('fuzz-rest'), json)),
      message: maybe(json),
      uuid: maybe(json),
      user: maybe(json),
      reason: maybe(json),
      paginate: maybe(fc.oneof(fc.constantFrom(0, 1, '1', true), json)),
      page: maybe(json),
      limit: maybe(json),
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), body, async (endpoint, value) => {
        const reply = expectEnvelope(await postBody(endpoint, value));
        if (reply['code'] === 'SB_INVALID_FIELD') expect(reply['error']).toMatch(/field "[A-Za-z]+"/);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('answers a wrong type or form in any field with a 400 naming that field', async () => {
    await fc.assert(
      fc.asyncProperty(wrongField, async ({ endpoint, field, value }) => {
        const body = validBody(endpoint);
        if (['channel', 'channelId', 'roomId'].includes(field)) delete body['channel'];
        body[field] = value;
        expectFieldError(await postBody(endpoint, body), field);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('answers an absent or null message with 400 "Missing message from payload"', async () => {
    for (const endpoint of ['/api/publish', '/api/v4/publish'] as const) {
      for (const message of [undefined, null]) {
        const reply = await postBody(endpoint, { ...validBody(endpoint), message });
        expect(reply.status).toBe(400);
        expect(JSON.parse(reply.text)).toEqual({
          success: false,
          error: 'Missing message from payload',
          code: 'SB_MISSING_MESSAGE',
        });
      }
    }
  });

  it('delivers any valid message exactly: a string as its text, other JSON as compact JSON', async () => {
    const v3 = await open('/v3/fuzz-deliver');
    const v4 = await open('/v4/fuzz-deliver');
    const credentials = { key: wsKey.key, secret: wsKey.secret };
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue().filter((m) => m !== null),
        fc.constantFrom('channel', 'channelId', 'roomId'),
        async (message, alias) => {
          const wire = JSON.stringify({ ...credentials, [alias]: 'fuzz-deliver', message });
          // What the gateway received after JSON decoding (e.g. -0 arrives as 0).
          const received: unknown = (JSON.parse(wire) as { message: unknown }).message;
          const expected = typeof received === 'string' ? received : JSON.stringify(received);
          expectEnvelope(await send('/api/publish', wire));
          expect((await v3.next()).text).toBe(expected);
          expectEnvelope(await send('/api/v4/publish', wire));
          expect((await v4.next()).text).toBe(expected);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('answers non-JSON text, arbitrary bytes and empty bodies with 400', async () => {
    const garbage = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.uint8Array({ maxLength: 300 }),
      fc.constant(''),
      fc.constantFrom(
        '{',
        '{"key":',
        'null',
        '[]',
        '"text"',
        '42',
        'true',
        '{"key":"a",}',
        "{'key':'a'}",
        '\u0000',
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), garbage, async (endpoint, body) => {
        const reply = await send(endpoint, body);
        expectEnvelope(reply);
        expect(reply.status).toBe(400);
      }),
      { numRuns: RUNS * 2 },
    );
    for (const endpoint of ENDPOINTS) {
      const reply = await send(endpoint);
      expect(reply.status).toBe(400);
      expect(JSON.parse(reply.text)).toMatchObject({
        success: false,
        error: 'Request body is empty; send a JSON object',
      });
    }
  });

  it('refuses a body that is not valid UTF-8 with a 400 and delivers nothing', async () => {
    const v3 = await open('/v3/fuzz-utf8');
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 40 }), async (bytes) => {
        const body = Buffer.concat([
          Buffer.from(
            JSON.stringify({ key: wsKey.key, secret: wsKey.secret, channel: 'fuzz-utf8' }).slice(0, -1) +
              ',"message":"',
          ),
          Buffer.from([0xff, ...bytes.filter((b) => b >= 0x80)]),
          Buffer.from('"}'),
        ]);
        const reply = await send('/api/publish', body);
        expect(reply.status).toBe(400);
        expect(expectEnvelope(reply)['error']).toBe('Request body is not valid UTF-8');
      }),
      { numRuns: 30 },
    );
    await v3.expectSilence();
  });

  it('handles deeply nested bodies within the size limit', async () => {
    const v3 = await open('/v3/fuzz-deep');
    const credentials = `"key":"${wsKey.key}","secret":"${wsKey.secret}"`;
    // The endpoint sweep authenticates with the key that has no sockets (it includes /api/kick).
    const restCredentials = `"key":"${restKey.key}","secret":"${restKey.secret}"`;
    const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const deepObject = (depth: number) => '{"a":'.repeat(depth) + '0' + '}'.repeat(depth);
    for (const endpoint of ENDPOINTS) {
      for (const body of [
        deepArray(10_000),
        deepObject(10_000),
        `{${restCredentials},"extra":${deepArray(30_000)}}`,
      ]) {
        expect(body.length).toBeLessThanOrEqual(LIMIT);
        expectEnvelope(await send(endpoint, body));
      }
      expectFieldError(await send(endpoint, `{"key":${deepArray(20_000)},"secret":"s"}`), 'key');
    }
    // A deep message is delivered as its exact text, or refused with a 400 naming it when it nests
    // deeper than the serializer goes; never a 5xx.
    for (const nested of [deepArray(1_000), deepArray(10_000), deepObject(10_000), deepArray(32_000)]) {
      const reply = await send('/api/publish', `{${credentials},"channel":"fuzz-deep","message":${nested}}`);
      expectEnvelope(reply);
      if (reply.status === 200) expect((await v3.next()).text).toBe(nested);
      else expectFieldError(reply, 'message');
    }
    expect(
      (await send('/api/publish', `{${credentials},"channel":"fuzz-deep","message":${deepArray(1_000)}}`))
        .status,
    ).toBe(200);
  });

  it('handles huge strings in every field', async () => {
    const v3 = await open('/v3/fuzz-huge');
    const huge = 'é'.repeat(30_000); // 60,000 bytes of UTF-8
    const credentials = { key: wsKey.key, secret: wsKey.secret };
    const message = await postBody('/api/publish', { ...credentials, channel: 'fuzz-huge', message: huge });
    expect(message.status).toBe(200);
    expect((await v3.next()).text).toBe(huge);
    for (const endpoint of ENDPOINTS) {
      expect((await postBody(endpoint, { key: huge, secret: 's' })).status).toBe(401);
      expectFieldError(await postBody(endpoint, { ...credentials, secret: 3, extra: huge }), 'secret');
    }
    expectFieldError(
      await postBody('/api/publish', { ...credentials, channel: huge, message: 1 }),
      'channel',
    );
    expectFieldError(await postBody('/api/v4/kick', { ...credentials, reason: huge }), 'reason');
    expectFieldError(await postBody('/api/v4/kick', { ...credentials, uuid: huge }), 'uuid');
  });

  it('answers bodies over 64 KiB with 413, with or without a content-length, and accepts exactly 64 KiB', async () => {
    const sized = (bytes: number): string => {
      const head = `{"key":"${restKey.key}","secret":"${restKey.secret}","channel":"fuzz-rest","message":"`;
      return head + 'x'.repeat(bytes - head.length - 2) + '"}';
    };
    for (const endpoint of ENDPOINTS) {
      const atLimit = await send(endpoint, sized(LIMIT));
      expect(atLimit.status).not.toBe(413);
      expectEnvelope(atLimit);
      for (const size of [LIMIT + 1, LIMIT * 4]) {
        const over = await send(endpoint, sized(size));
        expect(over.status).toBe(413);
        expect(JSON.parse(over.text)).toEqual({
          success: false,
          error: `Payload too large: the limit is ${LIMIT} bytes`,
          code: 'SB_PAYLOAD_TOO_LARGE',
        });
        // Chunked (no content-length): the gateway stops at the limit while reading.
        const chunks = sized(size);
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < chunks.length; i += 8192)
              controller.enqueue(new TextEncoder().encode(chunks.slice(i, i + 8192)));
            controller.close();
          },
        });
        const response = await fetch(`${node.httpUrl}${endpoint}`, {
          method: 'POST',
          body: stream,
          duplex: 'half',
        } as RequestInit);
        expect(response.status).toBe(413);
        expect(JSON.parse(await response.text())).toMatchObject({
          success: false,
          code: 'SB_PAYLOAD_TOO_LARGE',
        });
      }
    }
  });

  it('answers other methods with 405 and Allow, and unknown paths with 404', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        async (endpoint, method) => {
          const reply = await send(endpoint, method === 'GET' ? undefined : '{}', method);
          expectEnvelope(reply);
          expect(reply.status).toBe(405);
          expect(reply.headers.get('allow')).toBe('POST');
        },
      ),
      { numRuns: 30 },
    );
    // No leading dot: "." and ".." segments are normalized away by the URL parser.
    const segment = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,19}$/);
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 3 }), async (segments) => {
        const path = `/api/${segments.join('/')}`;
        fc.pre(!(ENDPOINTS as readonly string[]).includes(path) && path !== '/api/health');
        const reply = await send(path, '{}');
        expectEnvelope(reply);
        expect(reply.status).toBe(404);
      }),
      { numRuns: 30 },
    );
  });

  it('still serves afterwards: health 200 and a publish is delivered', async () => {
    const health = await fetch(`${node.httpUrl}/api/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
    const client = await open('/v3/fuzz-after');
    const reply = await postBody('/api/publish', {
      key: wsKey.key,
      secret: wsKey.secret,
      channelId: 'fuzz-after',
      message: 'still here',
    });
    expect(reply.status).toBe(200);
    expect((await client.next()).text).toBe('still here');
  });
});

// ---------------------------------------------------------------------------------------------
// WebSocket frames
// ---------------------------------------------------------------------------------------------

/** What the other end of the wire holds once a JS string went out as UTF-8. */
const onWire = (text: string): string => Buffer.from(text, 'utf8').toString('utf8');

const plainObject = (text: string): Record<string, unknown> | undefined => {
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
};

/** A frame the gateway treats as application data (no control event, no routing tags, not cmd_ping). */
const isApplicationFrame = (text: string): boolean => {
  if (text === 'cmd_ping') return false;
  const object = plainObject(text);
  if (!object) return true;
  const event = object['event'];
  if (typeof event === 'string' && event.startsWith('system::')) return false;
  return !('system::channel' in object) && !('system::to' in object);
};

const textFrames = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.string({ maxLength: 50 }),
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc
      .record({ event: fc.string(), data: fc.jsonValue(), meta: fc.jsonValue() })
      .map((value) => JSON.stringify(value)),
    fc.string().map((event) => JSON.stringify({ event: `system:${event}`, data: { from: 'a' } })),
  )
  .map(onWire)
  .filter(isApplicationFrame);

let marker = 0;

/**
 * Sends `frame` from `sender` (notify_self on), then a marker, and returns what the receiver and
 * the sender got up to that marker: frames on one socket are handled in order, so whatever the
 * frame caused (relay, echo, synchronous error) arrives before the marker does.
 */
async function exchange(
  sender: TestClient,
  receiver: TestClient,
  frame: string | Buffer,
): Promise<{ receiver: Received[]; sender: Received[] }> {
  const tag = `{"event":"marker","data":${++marker}}`;
  sender.send(frame);
  sender.send(tag);
  const upTo = async (client: TestClient): Promise<Received[]> => {
    const frames: Received[] = [];
    for (;;) {
      const next = await client.next();
      if (next.text === tag) return frames;
      frames.push(next);
    }
  };
  return { receiver: await upTo(receiver), sender: await upTo(sender) };
}

const texts = (frames: Received[]): string[] => frames.map((frame) => frame.text);

async function expectServing(protocol: 'v3' | 'v4'): Promise<void> {
  const channel = `alive-${protocol}-${++marker}`;
  const a = await open(`/${protocol}/${channel}`);
  const b = await open(`/${protocol}/${channel}`);
  a.send('{"event":"alive"}');
  expect((await b.next()).text).toBe('{"event":"alive"}');
  expect((await fetch(`${node.httpUrl}/api/health`)).status).toBe(200);
}

describe('V3 frames', () => {
  let sender: TestClient;
  let receiver: TestClient;
  beforeEach(async () => {
    sender = await open('/v3/fuzz-v3', { notify_self: '1' });
    receiver = await open('/v3/fuzz-v3');
  });

  it('relays arbitrary text and JSON verbatim (system: events too), to the sender only with notify_self', async () => {
    await fc.assert(
      fc.asyncProperty(textFrames, async (frame) => {
        const got = await exchange(sender, receiver, frame);
        expect(texts(got.receiver)).toEqual([frame]);
        expect(texts(got.sender)).toEqual([frame]);
      }),
      { numRuns: RUNS * 2 },
    );
    await expectServing('v3');
  });

  it('answers system:: control frames of any shape with system:error, relaying nothing', async () => {
    const control = fc.record({
      event: fc
        .oneof(fc.constantFrom('subscribe', 'unsubscribe', 'get_members'), fc.string())
        .map((name) => `system::${name}`),
      data: fc.jsonValue(),
    });
    await fc.assert(
      fc.asyncProperty(control, async (value) => {
        const got = await exchange(sender, receiver, JSON.stringify(value));
        expect(got.receiver).toEqual([]);
        expect(got.sender.map((frame) => frame.json)).toEqual([
          {
            event: 'system:error',
            data: { error: `Unknown event "${value.event}": V3 connections take no control events` },
          },
        ]);
      }),
      { numRuns: RUNS },
    );
  });

  it('swallows cmd_ping', async () => {
    const got = await exchange(sender, receiver, 'cmd_ping');
    expect(got).toEqual({ receiver: [], sender: [] });
  });

  it('relays binary garbage as binary, byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), async (bytes) => {
        const got = await exchange(sender, receiver, Buffer.from(bytes));
        expect(got.receiver.map((frame) => [frame.binary, frame.text])).toEqual([
          [true, Buffer.from(bytes).toString('base64')],
        ]);
        expect(got.sender.map((frame) => frame.binary)).toEqual([true]);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('V4 frames', () => {
  let sender: TestClient;
  let receiver: TestClient;
  beforeEach(async () => {
    sender = await open('/v4/fuzz-v4', { notify_self: '1' });
    receiver = await open('/v4/fuzz-v4');
  });

  it('relays arbitrary text and JSON on the primary verbatim', async () => {
    await fc.assert(
      fc.asyncProperty(textFrames, async (frame) => {
        const got = await exchange(sender, receiver, frame);
        expect(texts(got.receiver)).toEqual([frame]);
        expect(texts(got.sender)).toEqual([frame]);
      }),
      { numRuns: RUNS * 2 },
    );
    await expectServing('v4');
  });

  it('answers unknown system:: events with system::error', async () => {
    const unknown = fc
      .string({ unit: 'binary', maxLength: 20 })
      .map((name) => `system::${name}`)
      .map(onWire)
      .filter(
        (event) => !['system::subscribe', 'system::unsubscribe', 'system::get_members'].includes(event),
      );
    await fc.assert(
      fc.asyncProperty(unknown, fc.jsonValue(), async (event, data) => {
        const got = await exchange(sender, receiver, JSON.stringify({ event, data }));
        expect(got.receiver).toEqual([]);
        expect(got.sender).toHaveLength(1);
        const reply = got.sender[0]!.json!;
        expect(Object.keys(reply)).toEqual(['event', 'data']);
        expect(reply['event']).toBe('system::error');
        const error = (reply['data'] as { error: string }).error;
        expect(Object.keys(reply['data'] as object)).toEqual(['error']);
        expect(error).toContain(`"${event}"`);
      }),
      { numRuns: RUNS },
    );
  });

  it('answers control frames whose data or channel has the wrong shape with the matching _error reply', async () => {
    const kinds = {
      'system::subscribe': 'system::subscribe_error',
      'system::unsubscribe': 'system::unsubscribe_error',
      'system::get_members': 'system::member_list_error',
    } as const;
    const badData = fc.oneof(
      fc.constant(undefined),
      fc
        .jsonValue()
        .filter((data) => !data || typeof data !== 'object' || Array.isArray(data) || !('channel' in data)),
      fc.record(
        {
          channel: invalidChannel,
          presence: fc.jsonValue(),
          uuid: fc.jsonValue(),
          jwt: fc.jsonValue(),
          user: fc.jsonValue(),
        },
        { requiredKeys: ['channel'] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...(Object.keys(kinds) as Array<keyof typeof kinds>)),
        badData,
        async (event, data) => {
          const frame = JSON.stringify(data === undefined ? { event } : { event, data });
          const got = await exchange(sender, receiver, frame);
          expect(got.receiver).toEqual([]);
          expect(got.sender).toHaveLength(1);
          const channel = (data as { channel?: unknown } | null)?.channel;
          // JSON escapes lone surrogates, so a channel inside JSON comes back exactly as sent.
          const expectedChannel = typeof channel === 'string' ? channel : '';
          const error =
            typeof channel === 'string'
              ? `Invalid channel name: use ${CHANNEL_NAME_RULE}`
              : 'data.channel is required (a string)';
          expect(got.sender[0]!.json).toEqual({
            event: kinds[event],
            data: { channel: expectedChannel, error },
          });
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('subscribes with wrong-typed uuid, jwt, presence and user when the channel is valid; a jwt string must verify', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            presence: fc.jsonValue(),
            uuid: fc.jsonValue(),
            jwt: fc.oneof(notString, fc.constant(null), fc.string({ maxLength: 30 })),
            user: fc.jsonValue(),
          },
          { requiredKeys: [] },
        ),
        async (fields) => {
          const channel = `fuzz-sub-${++n}`;
          sender.send(JSON.stringify({ event: 'system::subscribe', data: { channel, ...fields } }));
          const reply = await sender.next((frame) =>
            String(frame.json?.['event']).startsWith('system::subscribe_'),
          );
          if (typeof fields.jwt === 'string' && fields.jwt !== '') {
            // A token presented must be valid, even on an unguarded channel.
            expect(reply.json).toEqual({
              event: 'system::subscribe_error',
              data: { channel, error: 'Authentication failed, provide valid jwt token.' },
            });
            return;
          }
          // uuid and user are bounded (docs/protocol.md, limits): 128 characters, 256 bytes of JSON.
          const user = fields.user === undefined || fields.user === '' ? undefined : fields.user;
          const tooLong =
            typeof fields.uuid === 'string' && [...fields.uuid].length > 128
              ? 'uuid is longer than 128 characters'
              : user !== undefined && Buffer.byteLength(JSON.stringify(user)) > 256
                ? 'user is longer than 256 bytes of JSON'
                : undefined;
          if (tooLong) {
            expect(reply.json).toEqual({
              event: 'system::subscribe_error',
              data: { channel, error: tooLong },
            });
            return;
          }
          expect(reply.text).toBe(`{"event":"system::subscribe_success","data":{"channel":"${channel}"}}`);
          const presence =
            fields.presence === true ||
            fields.presence === 1 ||
            fields.presence === '1' ||
            fields.presence === 'true';
          if (presence) {
            const list = await sender.nextEvent('system::member_list');
            expect(list.json?.['system::channel']).toBe(channel);
            const member = (list.json?.['data'] as { members: Array<{ uuid: unknown }> }).members[0]!;
            expect(typeof member.uuid).toBe('string');
            if (typeof fields.uuid === 'string' && fields.uuid !== '') expect(member.uuid).toBe(fields.uuid);
          }
          sender.send(JSON.stringify({ event: 'system::unsubscribe', data: { channel } }));
          expect((await sender.nextEvent('system::unsubscribe_success')).json).toEqual({
            event: 'system::unsubscribe_success',
            data: { channel },
          });
        },
      ),
      { numRuns: 40 },
    );
    await expectServing('v4');
  });

  it('answers system::subscribe to an invalid channel name with a subscribe_error naming the rule', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .oneof(
            fc.string({ unit: 'binary', maxLength: 60 }),
            fc.integer({ min: 129, max: 300 }).map((n) => '_'.repeat(n)),
          )
          .map(onWire)
          .filter((s) => !isValidChannelName(s)),
        async (channel) => {
          const got = await exchange(
            sender,
            receiver,
            JSON.stringify({ event: 'system::subscribe', data: { channel, presence: true, uuid: 'u' } }),
          );
          expect(got.sender.map((frame) => frame.json)).toEqual([
            {
              event: 'system::subscribe_error',
              data: { channel, error: `Invalid channel name: use ${CHANNEL_NAME_RULE}` },
            },
          ]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('answers frames tagged for a channel the socket is not in, or with a non-string system::to, with system::error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc
            .jsonValue()
            .filter((tag) => tag !== 'fuzz-v4' && tag !== undefined)
            .map((tag) => ({ event: 'chat', 'system::channel': tag })),
          notString.map((to) => ({ event: 'chat', 'system::to': to })),
        ),
        async (frame) => {
          const got = await exchange(sender, receiver, JSON.stringify(frame));
          expect(got.receiver).toEqual([]);
          expect(got.sender).toHaveLength(1);
          expect(got.sender[0]!.json?.['event']).toBe('system::error');
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('relays binary garbage to V4 sockets as system::binary with base64 data', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), async (bytes) => {
        const got = await exchange(sender, receiver, Buffer.from(bytes));
        const expected = `{"event":"system::binary","data":"${Buffer.from(bytes).toString('base64')}"}`;
        expect(texts(got.receiver)).toEqual([expected]);
        expect(texts(got.sender)).toEqual([expected]);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('broken frames and URLs', () => {
  const invalidUtf8 = fc
    .tuple(
      fc.uint8Array({ maxLength: 20 }),
      fc.constantFrom(
        [0xff],
        [0xc3, 0x28],
        [0xe2, 0x82],
        [0xed, 0xa0, 0x80],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
        [0x80],
      ),
      fc.uint8Array({ maxLength: 20 }),
    )
    .map(([before, bad, after]) =>
      Buffer.from([...before.filter((b) => b < 0x80), ...bad, ...after.filter((b) => b < 0x80)]),
    );

  it('drops a connection that sends invalid UTF-8 in a text frame (no close frame: 1006), and keeps serving the others', async () => {
    // uWebSockets.js validates text frames itself and fails the connection at once (RFC 6455
    // §8.1) before the gateway sees the frame: no error frame, no close frame; the client sees an
    // abnormal closure, 1006. The gateway's cleanup still runs: presence joins and leaves.
    const watchers = {
      v3: await open('/v3/presence-utf8', { user: 'watcher' }),
      v4: await open('/v4/presence-utf8', { user: 'watcher' }),
    };
    const memberEvent = (protocol: 'v3' | 'v4', kind: 'joined' | 'left', user: string) => (frame: Received) =>
      frame.json?.['event'] === `system${protocol === 'v3' ? ':' : '::'}member_${kind}` &&
      (frame.json['data'] as { member: { user?: unknown } }).member.user === user;
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('v3' as const, 'v4' as const),
        invalidUtf8,
        async (protocol, bytes) => {
          const user = `victim-${++n}`;
          const victim = await open(`/${protocol}/presence-utf8`, { user });
          await watchers[protocol].next(memberEvent(protocol, 'joined', user));
          victim.socket.send(bytes, { binary: false });
          expect(await victim.closed).toEqual({ code: 1006, reason: '' });
          expect(
            victim.received.filter((frame) => frame.json !== undefined && 'error' in frame.json),
          ).toEqual([]);
          await watchers[protocol].next(memberEvent(protocol, 'left', user));
        },
      ),
      { numRuns: 20 },
    );
    await expectServing('v3');
    await expectServing('v4');
  });

  it('closes a frame over 64 KiB with an error frame and 4513, on both versions', async () => {
    for (const protocol of ['v3', 'v4']) {
      for (const frame of ['x'.repeat(LIMIT + 1), Buffer.alloc(LIMIT * 2, 7)]) {
        const client = await open(`/${protocol}/fuzz-big`);
        client.send(frame);
        const size = typeof frame === 'string' ? LIMIT + 1 : LIMIT * 2;
        const text = `Message too large: ${size} bytes, the limit is ${LIMIT}`;
        expect((await client.next()).text).toBe(JSON.stringify({ error: text }));
        expect(await client.closed).toEqual({ code: 4513, reason: text });
      }
    }
    await expectServing('v4');
  });

  it('drops a frame over 16 times the limit without reading it (no error frame, no close frame: 1006)', async () => {
    // uWebSockets.js' own maxPayloadLength (16 × MAX_MESSAGE_BYTES): it fails the connection
    // before the gateway sees the frame.
    const client = await open('/v3/fuzz-huge-frame');
    client.send(Buffer.alloc(16 * LIMIT + 1, 1));
    expect(await client.closed).toEqual({ code: 1006, reason: '' });
    expect(client.received).toEqual([]);
    await expectServing('v3');
  });

  it('admits any percent-encoded channel path that decodes to a valid name, and refuses the rest with 4502', async () => {
    const names = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_\-.=@,;]{1,20}$/),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map(onWire),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('v3', 'v4'), names, async (protocol, name) => {
        // "." and ".." are path segments the URL parser resolves away before anything is sent.
        fc.pre(name !== '.' && name !== '..');
        // Built by hand: URLSearchParams would form-encode (space as "+"), which is not percent-encoding.
        const url = `${node.wsUrl(`/${protocol}/${encodeURIComponent(name)}`)}?api_key=${wsKey.key}&presence=1&user=${encodeURIComponent(name)}`;
        const client = await connectClient(url);
        clients.push(client);
        if (isValidChannelName(name)) {
          const list = await client.next();
          const member = ((list.json?.['data'] as { members: Array<{ user?: unknown }> }).members ?? [])[0];
          expect(member?.user).toBe(name);
        } else {
          const text = `Invalid channel name: use ${CHANNEL_NAME_RULE}`;
          expect((await client.next()).text).toBe(JSON.stringify({ error: text }));
          expect(await client.closed).toEqual({ code: 4502, reason: text });
        }
        client.close();
      }),
      { numRuns: 40 },
    );
    await expectServing('v3');
  });
});
