import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { createRedisClients, guard } from '../src/redis/clients';
import type { RedisClients } from '../src/redis/clients';
import { startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { silentLogger } from './support/redis-targets';
import { unique } from './support/wait';

describe('Redis command connection (standalone)', () => {
  let server: RedisServer;
  let clients: RedisClients;
  beforeAll(async () => {
    server = await startRedis();
    clients = createRedisClients({ kind: 'standalone', url: server.url }, silentLogger);
    await clients.up();
  }, 30_000);
  afterAll(async () => {
    await clients.close();
    await server.stop();
  });

  it('sends the commands of one event-loop turn in one write, in the order issued', async () => {
    const command = clients.command as Redis;
    const stream = command.stream as Socket & {
      _writev: NonNullable<Socket['_writev']>;
      _write: Socket['_write'];
    };
    const batches: number[] = [];
    const writev = stream._writev.bind(stream);
    const write = stream._write.bind(stream);
    stream._writev = (chunks, callback) => {
      batches.push(chunks.length);
      writev(chunks, callback);
    };
    stream._write = (chunk, encoding, callback) => {
      batches.push(1);
      write(chunk, encoding, callback);
    };
    try {
      const key = unique('counter');
      const replies = await Promise.all(
        Array.from({ length: 20 }, () => guard(command, () => command.incr(key))),
      );
      expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(batches).toEqual([20]);
      // Nothing is held past its turn: a lone command of a later turn goes out and is answered.
      expect(await guard(command, () => command.get(key))).toBe('20');
      expect(batches).toEqual([20, 1]);
    } finally {
      stream._writev = writev;
      stream._write = write;
    }
  });
});
