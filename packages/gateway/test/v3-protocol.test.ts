import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';

let node: TestGateway;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

const open = async (channel: string, query: Record<string, string> = {}): Promise<TestClient> => {
  const client = await connectClient(node.wsUrl(`/v3/${channel}`, { api_key: key.key, ...query }));
  clients.push(client);
  return client;
};

beforeAll(async () => {
  node = await startGateway({ memoryState: createMemoryState() });
  key = await createTestKey(node.engine);
});
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(() => node.close());

describe('V3 protocol', () => {
  it('sends the boot frame first when be=1, and nothing when it is absent', async () => {
    const dart = await open('boot-room', { be: '1' });
    expect((await dart.next()).text).toBe('{"event":"system:boot"}');
    const js = await open('boot-room');
    await js.expectSilence();
  });

  it('relays a client frame verbatim to the other connections, not to the sender without notify_self', async () => {
    const alice = await open('chat');
    const bob = await open('chat');
    const frame = '{"event":"chat","data":{"text":"hi"},"meta":{"from":"alice"}}';
    alice.send(frame);
    expect((await bob.next()).text).toBe(frame);
    await alice.expectSilence();
  });

  it('logs relayed client messages with their sender', async () => {
    const alice = await open('logged', { user: 'alice', uuid: 'dev-a', notify_self: '1' });
    alice.send('{"event":"note","data":1}');
    await alice.next();
    const [latest] = await node.engine.logs.recent(key.key, 1);
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
    const alice = await open('echo', { notify_self: '1' });
    alice.send('raw text is fine');
    expect((await alice.next()).text).toBe('raw text is fine');
  });

  it('swallows cmd_ping and relays system: events (WebRTC signalling)', async () => {
    const alice = await open('signal');
    const bob = await open('signal');
    alice.send('cmd_ping');
    const offer = '{"event":"system:video_offer","data":{"from":"a","to":"b","sdp":"x"}}';
    alice.send(offer);
    expect((await bob.next()).text).toBe(offer);
  });

  it('relays binary frames as binary to V3 connections of the channel', async () => {
    const alice = await open('bin');
    const bob = await open('bin');
    alice.send(Buffer.from([1, 2, 3, 255]));
    const got = await bob.next();
    expect(got.binary).toBe(true);
    expect(Buffer.from(got.text, 'base64')).toEqual(Buffer.from([1, 2, 3, 255]));
  });

  it('delivers API publishes as the exact text, and JSON values as compact JSON', async () => {
    const client = await open('news');
    expect(
      (
        await postJson(`${node.httpUrl}/api/publish`, {
          key: key.key,
          secret: key.secret,
          channel: 'news',
          message: 'plain',
        })
      ).status,
    ).toBe(200);
    expect((await client.next()).text).toBe('plain');
    await postJson(`${node.httpUrl}/api/publish`, {
      key: key.key,
      secret: key.secret,
      channel: 'news',
      message: { event: 'e', data: [1, 2] },
    });
    expect((await client.next()).text).toBe('{"event":"e","data":[1,2]}');
  });
});
