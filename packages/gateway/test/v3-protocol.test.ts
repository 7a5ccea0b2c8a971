import { useGateway } from './support/fixture';
import { postJson } from '@switchboard/testing';

const fx = useGateway();
const { open } = fx;

describe('V3 protocol', () => {
  it('sends the boot frame first when be=1, and nothing when it is absent', async () => {
    const dart = await open('/v3/boot-room', { be: '1' });
    expect((await dart.next()).text).toBe('{"event":"system:boot"}');
    const js = await open('/v3/boot-room');
    await js.expectSilence();
  });

  it('relays a client frame verbatim to the other connections, not to the sender without notify_self', async () => {
    const alice = await open('/v3/chat');
    const bob = await open('/v3/chat');
    const frame = '{"event":"chat","data":{"text":"hi"},"meta":{"from":"alice"}}';
    alice.send(frame);
    expect((await bob.next()).text).toBe(frame);
    await alice.expectSilence();
  });

  it('logs relayed client messages with their sender', async () => {
    const alice = await open('/v3/logged', { user: 'alice', uuid: 'dev-a', notify_self: '1' });
    alice.send('{"event":"note","data":1}');
    await alice.next();
    const [latest] = await fx.node.engine.logs.recent(fx.key.key, 1);
    expect(latest).toMatchObject({
      channel: 'logged',
      protocol: 'v3',
      source: 'client',
      message: '{"event":"note","data":1}',
      uuid: 'dev-a',
      user: 'alice',
    });
  });

  it('echoes to the sender when notify_self is on', async () => {
    const alice = await open('/v3/echo', { notify_self: '1' });
    alice.send('raw text is fine');
    expect((await alice.next()).text).toBe('raw text is fine');
  });

  it('swallows cmd_ping and relays system: events (WebRTC signalling)', async () => {
    const alice = await open('/v3/signal');
    const bob = await open('/v3/signal');
    alice.send('cmd_ping');
    const offer = '{"event":"system:video_offer","data":{"from":"a","to":"b","sdp":"x"}}';
    alice.send(offer);
    expect((await bob.next()).text).toBe(offer);
  });

  it('relays binary frames as binary to V3 connections of the channel', async () => {
    const alice = await open('/v3/bin');
    const bob = await open('/v3/bin');
    alice.send(Buffer.from([1, 2, 3, 255]));
    const got = await bob.next();
    expect(got.binary).toBe(true);
    expect(Buffer.from(got.text, 'base64')).toEqual(Buffer.from([1, 2, 3, 255]));
  });

  it('delivers API publishes as the exact text, and JSON values as compact JSON', async () => {
    const client = await open('/v3/news');
    expect(
      (
        await postJson(`${fx.node.httpUrl}/api/publish`, {
          key: fx.key.key,
          secret: fx.key.secret,
          channel: 'news',
          message: 'plain',
        })
      ).status,
    ).toBe(200);
    expect((await client.next()).text).toBe('plain');
    await postJson(`${fx.node.httpUrl}/api/publish`, {
      key: fx.key.key,
      secret: fx.key.secret,
      channel: 'news',
      message: { event: 'e', data: [1, 2] },
    });
    expect((await client.next()).text).toBe('{"event":"e","data":[1,2]}');
  });
});
