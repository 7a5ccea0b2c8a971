import { useGateway } from './support/fixture';
import { postJson } from '@switchboard/testing';

const fx = useGateway({ CLIENT_MESSAGES_PER_SECOND: '20', SLOW_CONSUMER_BYTES: String(256 * 1024) });
const { open } = fx;

describe('limits (docs/protocol.md)', () => {
  it('closes a frame over 64 KiB with an error frame and 4513', async () => {
    const client = await open('/v3/big');
    client.send('x'.repeat(64 * 1024 + 1));
    expect((await client.next()).json).toEqual({
      error: 'Message too large: 65537 bytes, the limit is 65536',
    });
    expect((await client.closed).code).toBe(4513);
  });

  it('accepts a frame of exactly 64 KiB', async () => {
    const sender = await open('/v4/edge');
    const receiver = await open('/v4/edge');
    sender.send('y'.repeat(64 * 1024));
    expect((await receiver.next()).text).toHaveLength(64 * 1024);
  });

  it('closes a connection over the message rate with 4029 and no error frame (it may reconnect)', async () => {
    const client = await open('/v3/flood');
    for (let i = 0; i < 25; i++) client.send(`m${i}`);
    const closed = await client.closed;
    expect(closed.code).toBe(4029);
    expect(client.received.filter((f) => f.json?.['error'] !== undefined)).toEqual([]);
  });

  it('closes a slow consumer with 4008 without slowing the others', async () => {
    const slow = await open('/v3/firehose');
    const fast = await open('/v3/firehose');
    (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const message = 'z'.repeat(8 * 1024);
    let published = 0;
    const before = fx.node.gateway.context.registry.size;
    while (fx.node.gateway.context.registry.size === before && published < 5000) {
      const response = await postJson(`${fx.node.httpUrl}/api/publish`, {
        key: fx.key.key,
        secret: fx.key.secret,
        channel: 'firehose',
        message,
      });
      expect(response.status).toBe(200);
      published++;
    }
    expect(fx.node.gateway.context.registry.size).toBe(before - 1);
    await fast.next(() => fast.received.length === published, 10_000);
    (slow.socket as unknown as { _socket: { resume(): void } })._socket.resume();
    expect((await slow.closed).code).toBe(4008);
  });
});
