/**
 * Offsets, history and recovery on one gateway (memory engine): every frame an opted-in
 * subscription gets (docs/protocol.md, "History and recovery"), V3 and V4, primary and
 * secondary, resumed and not; and the frames of sockets that did not opt in stay as they were.
 */
import type { TestClient } from '@switchboard/testing';
import { useGateway } from './support/fixture';

const fx = useGateway();
const { open, call } = fx;

interface Position {
  channel: string;
  epoch: string;
  offset: number;
  recovered?: boolean;
  missed: number;
}

const positionOf = async (client: TestClient): Promise<Position> =>
  (await client.nextEvent('system::position')).json!['data'] as Position;

/**
 * The next frame: the channel's first epoch, at offset 0 with nothing lost, which a subscription
 * that read the channel without history (an empty epoch) gets before its first publication.
 */
const firstEpochOf = async (client: TestClient, channel: string): Promise<void> => {
  expect((await client.next()).json).toEqual({
    event: 'system::position',
    data: { channel, epoch: expect.not.stringMatching(/^_e/), offset: 0, recovered: true, missed: 0 },
  });
};

const publish = async (
  channel: string,
  message: unknown,
  version: 'v3' | 'v4' = 'v3',
): Promise<{ offset: number; epoch: string }> => {
  const path = version === 'v3' ? '/api/publish' : '/api/v4/publish';
  const { status, body } = await call(path, { channel, message });
  expect(status).toBe(200);
  return body as { offset: number; epoch: string };
};

const subscribe = async (client: TestClient, data: Record<string, unknown>): Promise<unknown> => {
  client.send({ event: 'system::subscribe', data });
  return (await client.next((f) => /^system::subscribe_(success|error)$/.test(String(f.json?.['event']))))
    .json;
};

describe('publish positions', () => {
  it('answers each publish with the next offset of its topic, in one epoch, per protocol', async () => {
    const first = await publish('pos-a', { event: 'x', data: 1 });
    const second = await publish('pos-a', 'text');
    expect(first.offset).toBe(1);
    expect(second).toEqual({ success: true, offset: 2, epoch: first.epoch });
    expect(first.epoch).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
    expect((await publish('pos-a', 'v4 world', 'v4')).offset).toBe(1);
    expect((await publish('pos-b', 'other channel')).offset).toBe(1);
  });
});

describe('V3 opted-in sockets', () => {
  it('get system::position first (after the boot frame), then publications stamped or wrapped', async () => {
    await publish('v3-live', 'before');
    const client = await open('/v3/v3-live', { recover: '1', be: '1' });
    expect((await client.next()).text).toBe('{"event":"system:boot"}');
    const position = (await client.next()).json!;
    expect(position['event']).toBe('system::position');
    expect(position['data']).toEqual({ channel: 'v3-live', epoch: expect.any(String), offset: 1, missed: 0 });
    await publish('v3-live', { event: 'chat', data: 'hi' });
    await publish('v3-live', 'plain text');
    expect((await client.next()).text).toBe('{"event":"chat","data":"hi","system::offset":2}');
    expect((await client.next()).text).toBe(
      '{"event":"system::message","data":"plain text","system::offset":3}',
    );
  });

  it('leave frames of sockets that did not opt in exactly as before', async () => {
    const plain = await open('/v3/v3-mixed');
    const opted = await open('/v3/v3-mixed', { recover: '1' });
    await positionOf(opted);
    await publish('v3-mixed', { event: 'chat', data: 1 });
    await publish('v3-mixed', 'raw');
    expect((await plain.next()).text).toBe('{"event":"chat","data":1}');
    expect((await plain.next()).text).toBe('raw');
    await firstEpochOf(opted, 'v3-mixed');
    expect((await opted.next()).text).toBe('{"event":"chat","data":1,"system::offset":1}');
    await plain.expectSilence((f) => f.text.includes('system::'));
  });

  it('resume with since and epoch: recovered, missed, the missed publications in order, then live', async () => {
    const first = await publish('v3-resume', 'one');
    await publish('v3-resume', { event: 'e', data: 2 });
    await publish('v3-resume', 'three');
    const client = await open('/v3/v3-resume', { since: '1', epoch: first.epoch });
    expect(await positionOf(client)).toEqual({
      channel: 'v3-resume',
      epoch: first.epoch,
      offset: 3,
      recovered: true,
      missed: 2,
    });
    expect((await client.next()).text).toBe('{"event":"e","data":2,"system::offset":2}');
    expect((await client.next()).text).toBe('{"event":"system::message","data":"three","system::offset":3}');
    await publish('v3-resume', 'four');
    expect((await client.next()).json?.['system::offset']).toBe(4);
  });

  it('a since at the latest offset recovers with nothing missed', async () => {
    const latest = await publish('v3-level', 'only');
    const client = await open('/v3/v3-level', { since: String(latest.offset), epoch: latest.epoch });
    expect(await positionOf(client)).toMatchObject({ offset: 1, recovered: true, missed: 0 });
  });

  it.each([
    ['another epoch', (p: { epoch: string }) => ({ since: '0', epoch: `${p.epoch}x` })],
    ['a since ahead of the topic', (p: { epoch: string }) => ({ since: '99', epoch: p.epoch })],
  ])('%s is unrecoverable: recovered false, nothing replayed, live from the position', async (_, resume) => {
    const published = await publish(`v3-unrec-${resume.length}-${_.length}`, 'gone');
    const channel = `v3-unrec-${resume.length}-${_.length}`;
    const client = await open(`/v3/${channel}`, resume(published));
    expect(await positionOf(client)).toEqual({
      channel,
      epoch: published.epoch,
      offset: 1,
      recovered: false,
      missed: 0,
    });
    await publish(channel, 'next');
    expect((await client.next()).text).toBe('{"event":"system::message","data":"next","system::offset":2}');
  });

  it.each([
    [{ since: '-1', epoch: 'abc' }, 'Invalid since "-1": must be a non-negative integer offset'],
    [{ since: 'x', epoch: 'abc' }, 'Invalid since "x": must be a non-negative integer offset'],
    [{ since: '1', epoch: 'bad*epoch' }, 'Invalid epoch "bad*epoch"'],
    [{ since: '1' }, 'since was given without epoch; resume with both'],
    [{ epoch: 'abc' }, 'epoch was given without since; resume with both'],
  ])('refuses malformed %j with an error frame and 4540', async (query, text) => {
    const client = await open('/v3/v3-bad', { recover: '1', ...query });
    const error = (await client.next()).json!;
    expect(String(error['error'])).toContain(text);
    expect((await client.closed).code).toBe(4540);
  });

  it('relays client messages with offsets; the sender gets its own only with notify_self', async () => {
    const quiet = await open('/v3/v3-relay', { recover: '1' });
    const echo = await open('/v3/v3-relay', { recover: '1', notify_self: '1' });
    await positionOf(quiet);
    await positionOf(echo);
    quiet.send('{"event":"said","data":"q"}');
    echo.send('raw words');
    await firstEpochOf(echo, 'v3-relay');
    expect((await echo.next()).text).toBe('{"event":"said","data":"q","system::offset":1}');
    expect((await echo.next()).text).toBe(
      '{"event":"system::message","data":"raw words","system::offset":2}',
    );
    await firstEpochOf(quiet, 'v3-relay');
    expect((await quiet.next()).text).toBe(
      '{"event":"system::message","data":"raw words","system::offset":2}',
    );
    await quiet.expectSilence((f) => f.text.includes('"q"'));
  });

  it('gets presence events and binary frames unchanged, without offsets', async () => {
    const watcher = await open('/v3/v3-events', { recover: '1', presence: '1', user: 'w' });
    await positionOf(watcher);
    await watcher.nextEvent('system:member_list');
    const joiner = await open('/v3/v3-events', { presence: '1', user: 'j' });
    const joined = (
      await watcher.next(
        (f) => f.json?.['event'] === 'system:member_joined' && JSON.stringify(f.json).includes('"j"'),
      )
    ).json!;
    expect(joined['system::offset']).toBeUndefined();
    joiner.send(Buffer.from([1, 2, 3]));
    const binary = await watcher.next((f) => f.binary);
    expect(binary.text).toBe(Buffer.from([1, 2, 3]).toString('base64'));
  });
});

describe('V4 opted-in subscriptions', () => {
  it('primary: position, then frames with system::offset and no channel stamp', async () => {
    const client = await open('/v4/v4-prim', { recover: '1' });
    expect(await positionOf(client)).toMatchObject({ channel: 'v4-prim', offset: 0, missed: 0 });
    await publish('v4-prim', { event: 'a', data: 1 }, 'v4');
    await publish('v4-prim', [1, 2], 'v4');
    await firstEpochOf(client, 'v4-prim');
    expect((await client.next()).text).toBe('{"event":"a","data":1,"system::offset":1}');
    expect((await client.next()).text).toBe('{"event":"system::message","data":"[1,2]","system::offset":2}');
  });

  it('secondary: subscribe_success, position, the missed publications and live ones, all stamped', async () => {
    const first = await publish('v4-sec', { event: 'one' }, 'v4');
    await publish('v4-sec', { event: 'two' }, 'v4');
    const client = await open('/v4/v4-home');
    expect(
      await subscribe(client, { channel: 'v4-sec', recover: true, since: 1, epoch: first.epoch }),
    ).toEqual({
      event: 'system::subscribe_success',
      data: { channel: 'v4-sec' },
    });
    expect((await client.next()).json).toEqual({
      event: 'system::position',
      data: { channel: 'v4-sec', epoch: first.epoch, offset: 2, recovered: true, missed: 1 },
      'system::channel': 'v4-sec',
    });
    expect((await client.next()).text).toBe('{"event":"two","system::channel":"v4-sec","system::offset":2}');
    await publish('v4-sec', 'text', 'v4');
    expect((await client.next()).text).toBe(
      '{"event":"system::message","data":"text","system::channel":"v4-sec","system::offset":3}',
    );
  });

  it('secondary without recover keeps the plain frames; a malformed resume is a subscribe_error', async () => {
    const client = await open('/v4/v4-home2');
    await subscribe(client, { channel: 'v4-plain' });
    await publish('v4-plain', { event: 'x' }, 'v4');
    expect((await client.next()).text).toBe('{"event":"x","system::channel":"v4-plain"}');
    expect(await subscribe(client, { channel: 'v4-badresume', since: -3, epoch: 'abc' })).toEqual({
      event: 'system::subscribe_error',
      data: { channel: 'v4-badresume', error: 'Invalid since -3: must be a non-negative integer offset' },
    });
    client.send({ event: 'system::get_members', data: { channel: 'v4-home2' } });
    await client.nextEvent('system::member_list');
  });

  it('direct messages reach an opted-in target without an offset', async () => {
    const target = await open('/v4/v4-direct', { recover: '1', user: 'tina' });
    await positionOf(target);
    const sender = await open('/v4/v4-direct', { user: 'sam' });
    sender.send({ event: 'psst', data: 1, 'system::to': 'tina' });
    const frame = (await target.nextEvent('psst')).json!;
    expect(frame['system::offset']).toBeUndefined();
  });
});

describe('REST history', () => {
  it('returns the position and publications after since, or the latest limit, per protocol', async () => {
    const a = await publish('rest-h', 'a');
    await publish('rest-h', { event: 'b' });
    await publish('rest-h', 'c');
    const after = await call('/api/history', { channel: 'rest-h', since: 1 });
    expect(after.status).toBe(200);
    expect(after.body).toEqual({
      success: true,
      epoch: a.epoch,
      offset: 3,
      publications: [
        { offset: 2, message: '{"event":"b"}', timestamp: expect.any(String) },
        { offset: 3, message: 'c', timestamp: expect.any(String) },
      ],
    });
    const latest = (await call('/api/history', { channel: 'rest-h', limit: 1 })).body as {
      publications: Array<{ offset: number; timestamp: string }>;
    };
    expect(latest.publications.map((p) => p.offset)).toEqual([3]);
    expect(new Date(latest.publications[0]!.timestamp).toISOString()).toBe(latest.publications[0]!.timestamp);
    const v4 = (await call('/api/v4/history', { channel: 'rest-h' })).body;
    expect(v4).toMatchObject({ success: true, offset: 0, publications: [] });
  });

  it.each([
    [{ since: -1 }, 'Invalid field "since": must be a non-negative integer'],
    [{ limit: 'many' }, 'Invalid field "limit": must be a non-negative integer'],
    [{}, 'Missing field "channel"'],
  ])('refuses %j with 400 naming the field', async (fields, error) => {
    const body =
      'channel' in fields || Object.keys(fields).length === 0 ? fields : { channel: 'rest-h', ...fields };
    const reply = await call('/api/history', body);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ success: false, error });
  });
});

describe('history retention', () => {
  const small = useGateway({ HISTORY_SIZE: '2' });

  it('keeps the last HISTORY_SIZE publications: an older since is unrecoverable', async () => {
    const send = (message: string) => small.call('/api/publish', { channel: 'trim', message });
    const first = (await send('1')).body as { epoch: string };
    await send('2');
    await send('3');
    const history = (await small.call('/api/history', { channel: 'trim' })).body as {
      publications: Array<{ offset: number }>;
    };
    expect(history.publications.map((p) => p.offset)).toEqual([2, 3]);
    const lost = await small.open('/v3/trim', { since: '0', epoch: first.epoch });
    expect(await positionOf(lost)).toMatchObject({ offset: 3, recovered: false, missed: 0 });
    const kept = await small.open('/v3/trim', { since: '1', epoch: first.epoch });
    expect(await positionOf(kept)).toMatchObject({ offset: 3, recovered: true, missed: 2 });
  });
});
