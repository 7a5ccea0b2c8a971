import { Redis } from 'ioredis';
import { evalFlat, sendFlat } from '../src/redis/flat-command';
import type { RedisClients } from '../src/redis/clients';
import { describeEachRedis } from './support/redis-targets';
import { unique } from './support/wait';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';

/** Commands sent without ioredis' argument flattening answer what ioredis' own methods answer. */
describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });

  it('sends strings, numbers and buffers as ioredis does, and decodes the reply as UTF-8', async () => {
    const { command } = clients;
    const key = `{${unique('flat')}}:k`;
    const text = 'é 漢字 🎉 "quoted" \r\n and a newline';
    expect(await sendFlat(command, 'set', [key, text])).toBe('OK');
    expect(await command.get(key)).toBe(text);
    expect(await sendFlat(command, 'get', [key])).toBe(text);
    expect(await sendFlat(command, 'set', [key, 42])).toBe('OK');
    expect(await sendFlat(command, 'incrby', [key, 8])).toBe(50);
    expect(await sendFlat(command, 'set', [key, Buffer.from([0xc3, 0xa9, 0x21])])).toBe('OK');
    expect(await command.get(key)).toBe('é!');
  });

  it('runs scripts by EVAL and EVALSHA with keys and arguments, and fails like ioredis', async () => {
    const { command } = clients;
    const key = `{${unique('flat')}}:k`;
    const source = "redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2]); return redis.call('GET', KEYS[1])";
    expect(await evalFlat(command, 'eval', source, [key], ['ü', 7])).toBe('ü|7');
    const sha = 'ffffffffffffffffffffffffffffffffffffffff';
    await expect(evalFlat(command, 'evalsha', sha, [key], ['x'])).rejects.toThrow(/^NOSCRIPT/);
    await expect(sendFlat(command, 'nosuchcommand', [key])).rejects.toThrow(/unknown command/i);
  });
});

describe('a command that gets no answer', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url, { commandTimeout: 300, maxRetriesPerRequest: 0 });
    await client.ping();
  });
  afterAll(async () => {
    server.thaw();
    client.disconnect();
    await server.stop();
  });

  it("fails after ioredis' commandTimeout, and later replies still meet their commands", async () => {
    const key = unique('stalled');
    server.freeze();
    const started = performance.now();
    const stalled = sendFlat(client, 'incr', [key]);
    await expect(stalled).rejects.toThrow('Command timed out');
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(300);
    server.thaw();
    // The stalled INCR is still in ioredis' queue: Redis runs it, and its reply is not taken
    // for the next command's.
    expect(await sendFlat(client, 'incr', [key])).toBe(2);
    expect(await sendFlat(client, 'get', [key])).toBe('2');
  });
});
