import {
  PONG_FRAME,
  batchAnswer,
  cacheMiss,
  channelAnswer,
  channelEvent,
  channelsAnswer,
  clientEvent,
  connectionEstablished,
  errorFrame,
  isPusherHttpError,
  memberAdded,
  memberRemoved,
  parseBatchBody,
  parseChannelQuery,
  parseChannelsQuery,
  parseClientFrame,
  parseEventBody,
  parseUsersChannel,
  presenceSubscriptionSucceeded,
  signinSuccess,
  subscriptionError,
  subscriptionSucceeded,
  usersAnswer,
  watchlistEvents,
} from '../../src/protocols/pusher';

describe('server frames, byte for byte', () => {
  it('double-encode data where Pusher does', () => {
    expect(connectionEstablished('1.2', 120)).toBe(
      '{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"1.2\\",\\"activity_timeout\\":120}"}',
    );
    expect(subscriptionSucceeded('orders')).toBe(
      '{"event":"pusher_internal:subscription_succeeded","channel":"orders","data":"{}"}',
    );
    expect(
      presenceSubscriptionSucceeded('presence-r', [
        { userId: '1', userInfo: { n: 'A' } },
        { userId: '2' },
        { userId: '1', userInfo: { n: 'A' } },
      ]),
    ).toBe(
      '{"event":"pusher_internal:subscription_succeeded","channel":"presence-r","data":"{\\"presence\\":{\\"ids\\":[\\"1\\",\\"2\\"],\\"hash\\":{\\"1\\":{\\"n\\":\\"A\\"},\\"2\\":null},\\"count\\":2}}"}',
    );
    expect(memberAdded('presence-r', { userId: '3', userInfo: { n: 'C' } })).toBe(
      '{"event":"pusher_internal:member_added","channel":"presence-r","data":"{\\"user_id\\":\\"3\\",\\"user_info\\":{\\"n\\":\\"C\\"}}"}',
    );
    expect(memberRemoved('presence-r', '3')).toBe(
      '{"event":"pusher_internal:member_removed","channel":"presence-r","data":"{\\"user_id\\":\\"3\\"}"}',
    );
    expect(channelEvent('orders', 'e', '{"a":1}')).toBe(
      '{"event":"e","channel":"orders","data":"{\\"a\\":1}"}',
    );
  });

  it('send objects where Pusher does', () => {
    expect(errorFrame(4001, 'Application does not exist')).toBe(
      '{"event":"pusher:error","data":{"code":4001,"message":"Application does not exist"}}',
    );
    expect(errorFrame(null, 'x')).toBe('{"event":"pusher:error","data":{"code":null,"message":"x"}}');
    expect(PONG_FRAME).toBe('{"event":"pusher:pong","data":{}}');
    expect(subscriptionError('private-a', { type: 'AuthError', error: 'no', status: 401 })).toBe(
      '{"event":"pusher:subscription_error","channel":"private-a","data":{"type":"AuthError","error":"no","status":401}}',
    );
    expect(cacheMiss('cache-a')).toBe('{"event":"pusher:cache_miss","channel":"cache-a"}');
    expect(signinSuccess('{"id":"u"}')).toBe(
      '{"event":"pusher:signin_success","data":{"user_data":"{\\"id\\":\\"u\\"}"}}',
    );
    expect(watchlistEvents([{ name: 'offline', user_ids: ['b'] }])).toBe(
      '{"event":"pusher_internal:watchlist_events","data":{"events":[{"name":"offline","user_ids":["b"]}]}}',
    );
  });

  it('keep a user or channel named __proto__ as an ordinary key', () => {
    const roster = JSON.parse(
      JSON.parse(presenceSubscriptionSucceeded('presence-r', [{ userId: '__proto__', userInfo: { n: 1 } }]))
        .data,
    );
    expect(roster.presence.count).toBe(1);
    expect(Object.keys(roster.presence.hash)).toEqual(['__proto__']);
    const query = { prefix: '', userCount: false, subscriptionCount: true };
    const listed = JSON.stringify(channelsAnswer(query, [{ name: '__proto__', subscriptionCount: 2 }]));
    expect(listed).toBe('{"channels":{"__proto__":{"subscription_count":2}}}');
  });

  it('splice a client event data text unchanged and add user_id', () => {
    const frame = clientEvent('presence-c', 'client-t', '{"x":[1,"</script>"]}', 'u1');
    expect(frame).toBe(
      '{"event":"client-t","channel":"presence-c","data":{"x":[1,"</script>"]},"user_id":"u1"}',
    );
    expect(JSON.parse(frame)).toEqual({
      event: 'client-t',
      channel: 'presence-c',
      data: { x: [1, '</script>'] },
      user_id: 'u1',
    });
    expect(clientEvent('private-c', 'client-t', undefined)).toBe(
      '{"event":"client-t","channel":"private-c"}',
    );
  });
});

describe('client frame parser', () => {
  const parse = (frame: unknown, max = 1024) =>
    parseClientFrame(typeof frame === 'string' ? frame : JSON.stringify(frame), max);

  it('reads every command pusher-js sends', () => {
    expect(parse({ event: 'pusher:ping', data: {} })).toEqual({ ok: true, command: { type: 'ping' } });
    expect(parse({ event: 'pusher:subscribe', data: { auth: '', channel: 'orders' } })).toMatchObject({
      ok: true,
      command: { type: 'subscribe', channel: { name: 'orders', kind: 'public' } },
    });
    expect(
      parse({
        event: 'pusher:subscribe',
        data: { auth: 'k:s', channel_data: '{"user_id":1}', channel: 'presence-a' },
      }),
    ).toMatchObject({
      ok: true,
      command: { auth: 'k:s', channelData: '{"user_id":1}' },
    });
    // A data object sent as a JSON string (some older clients) is read too.
    expect(parse({ event: 'pusher:subscribe', data: JSON.stringify({ channel: 'orders' }) })).toMatchObject({
      ok: true,
    });
    expect(parse({ event: 'pusher:unsubscribe', data: { channel: 'orders' } })).toEqual({
      ok: true,
      command: { type: 'unsubscribe', channel: 'orders' },
    });
    expect(parse({ event: 'pusher:signin', data: { auth: 'k:s', user_data: '{"id":"u"}' } })).toEqual({
      ok: true,
      command: { type: 'signin', auth: 'k:s', userData: '{"id":"u"}' },
    });
    expect(parse({ event: 'client-x', channel: 'private-a', data: 'text' })).toEqual({
      ok: true,
      command: {
        type: 'client-event',
        event: 'client-x',
        channel: expect.objectContaining({ name: 'private-a' }),
        dataJson: '"text"',
      },
    });
  });

  it.each([
    ['not json', 'Frame is not valid JSON'],
    ['[1]', 'Frame must be a JSON object'],
    ['{"data":{}}', 'Frame has no event name'],
    ['{"event":"pusher:subscribe"}', 'pusher:subscribe needs data'],
    ['{"event":"pusher:subscribe","data":{"channel":"a b"}}', "Invalid channel name: 'a b'"],
    [
      '{"event":"pusher:subscribe","data":{"channel":"presence-a","channel_data":{"user_id":1}}}',
      'channel_data must be the JSON string',
    ],
    ['{"event":"pusher:unsubscribe","data":{}}', 'pusher:unsubscribe needs data.channel'],
    ['{"event":"pusher:signin","data":{"auth":"k:s"}}', 'pusher:signin needs data.user_data'],
    ['{"event":"pusher:other","data":{}}', "Unsupported event 'pusher:other'"],
    ['{"event":"my-event","channel":"private-a"}', "Client events must start with 'client-'"],
    ['{"event":"client-x","data":{}}', "Client event 'client-x' has no channel"],
  ])('refuses %s', (frame, message) => {
    const parsed = parseClientFrame(frame, 1024);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.message).toContain(message);
  });

  it('refuses a frame over the size bound before parsing it', () => {
    expect(parse({ event: 'client-x', channel: 'private-a', data: 'x'.repeat(2000) })).toEqual({
      ok: false,
      message: 'Frame too large: the limit is 1024 bytes',
    });
    expect(parse({ event: `client-${'x'.repeat(200)}`, channel: 'private-a' }, 4096)).toMatchObject({
      ok: false,
    });
  });
});

describe('HTTP API bodies and answers', () => {
  const limits = { maxBodyBytes: 65536, maxDataBytes: 10240 };
  const body = (value: unknown) => JSON.stringify(value);

  it.each([
    [body({ name: 'e', data: 'x' }), 400, 'Exactly one of channel or channels'],
    [
      body({ name: 'e', data: 'x', channel: 'a', channels: ['b'] }),
      400,
      'Exactly one of channel or channels',
    ],
    [body({ name: 'e', data: { a: 1 }, channel: 'a' }), 400, 'data must be a string'],
    [body({ data: 'x', channel: 'a' }), 400, 'name is required'],
    [body({ name: 'x'.repeat(201), data: 'x', channel: 'a' }), 400, 'name is longer than 200'],
    [
      body({ name: 'pusher_internal:member_added', data: 'x', channel: 'a' }),
      400,
      "must not start with 'pusher:'",
    ],
    [
      body({ name: 'e', data: 'x', channels: Array.from({ length: 101 }, (_, i) => `c${i}`) }),
      400,
      'more than 100',
    ],
    [body({ name: 'e', data: 'x', channel: 'a b' }), 400, 'Invalid channel name'],
    [body({ name: 'e', data: 'x', channel: 'a', socket_id: 'abc' }), 400, 'socket_id must look like 123.456'],
    [body({ name: 'e', data: 'x', channel: 'a', info: 'colour' }), 400, "Unknown info attribute 'colour'"],
    ['{', 400, 'not valid JSON'],
    ['[]', 400, 'Request body must be a JSON object'],
    [Buffer.from([0x7b, 0xff, 0x7d]), 400, 'not valid UTF-8'],
  ])('POST /events refuses %s', (text, status, message) => {
    const result = parseEventBody(text, limits);
    expect(result).toMatchObject({ status, body: expect.stringContaining(message) });
  });

  it('POST /batch_events allows 10 events and names the bad one', () => {
    const event = { channel: 'a', name: 'e', data: 'x' };
    expect(Array.isArray(parseBatchBody(body({ batch: Array(10).fill(event) }), limits))).toBe(true);
    expect(parseBatchBody(body({ batch: Array(11).fill(event) }), limits)).toMatchObject({
      status: 400,
      body: expect.stringContaining('more than 10'),
    });
    expect(parseBatchBody(body({ batch: [event, { ...event, channel: 'a b' }] }), limits)).toMatchObject({
      status: 400,
      body: expect.stringMatching(/^batch\.1: Invalid channel name/),
    });
    expect(parseBatchBody(body({ batch: [event, { ...event, name: undefined }] }), limits)).toMatchObject({
      status: 400,
      body: 'batch.1: name is required',
    });
    expect(batchAnswer(parseBatchBody(body({ batch: [event] }), limits) as never, new Map())).toEqual({});
  });

  it('GET queries and answers have Pusher shapes', () => {
    expect(parseChannelsQuery(new Map([['info', 'user_count']]))).toMatchObject({ status: 400 });
    const query = parseChannelsQuery(
      new Map([
        ['filter_by_prefix', 'presence-'],
        ['info', 'user_count'],
      ]),
    );
    if (isPusherHttpError(query)) throw new Error(query.body);
    expect(
      channelsAnswer(query, [
        { name: 'presence-a', subscriptionCount: 3, userCount: 2 },
        { name: 'other', subscriptionCount: 1 },
      ]),
    ).toEqual({ channels: { 'presence-a': { user_count: 2 } } });
    expect(
      channelsAnswer({ prefix: '', userCount: false, subscriptionCount: false }, [
        { name: 'x', subscriptionCount: 1 },
      ]),
    ).toEqual({
      channels: { x: {} },
    });

    expect(parseChannelQuery('private-a', new Map([['info', 'user_count']]))).toMatchObject({ status: 400 });
    expect(parseChannelQuery('a', new Map([['info', 'cache']]))).toMatchObject({ status: 400 });
    const one = parseChannelQuery(
      'presence-cache-a',
      new Map([['info', 'user_count,subscription_count,cache']]),
    );
    if (isPusherHttpError(one)) throw new Error(one.body);
    expect(
      channelAnswer(one, { subscriptionCount: 4, userCount: 3 }, { event: 'e', data: 'd', ttl: 1800 }),
    ).toEqual({
      occupied: true,
      user_count: 3,
      subscription_count: 4,
      cache: { data: 'd', ttl: 1800 },
    });
    expect(
      channelAnswer({ ...one, userCount: false, subscriptionCount: false, cache: false }, undefined),
    ).toEqual({
      occupied: false,
    });

    expect(parseUsersChannel('private-a')).toEqual({
      status: 400,
      body: 'Users can only be retrieved for presence channels',
    });
    expect(usersAnswer(['1', '2'])).toEqual({ users: [{ id: '1' }, { id: '2' }] });
  });
});
