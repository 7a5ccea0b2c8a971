import { Cluster } from 'ioredis';
import type { RedisClients } from '../src/redis/clients';
import { RedisConnectionCounts } from '../src/counts/counts-redis';
import { describeCountsContract } from './contracts/counts.contract';
import { describeEachRedis } from './support/redis-targets';
import { unique } from './support/wait';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeCountsContract(
    'redis',
    async () => new RedisConnectionCounts(clients.command, backend().freshKeys()),
  );

  describe('Redis counts: write order', () => {
    let admin: RedisClients;
    beforeAll(async () => {
      admin = await backend().clients();
    });
    afterAll(async () => {
      await admin.close();
    });

    /** Every master holds its clients' writes (CLIENT PAUSE WRITE) until `resume`. */
    const masters = () =>
      admin.command instanceof Cluster ? admin.command.nodes('master') : [admin.command];
    const pause = () => Promise.all(masters().map((m) => m.call('CLIENT', 'PAUSE', '10000', 'WRITE')));
    const resume = () => Promise.all(masters().map((m) => m.call('CLIENT', 'UNPAUSE')));
    /** Until the batches of this turn have left (they leave at the end of their turn). */
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    it('counts a socket that closed while its increment was unanswered as closed', async () => {
      // A socket opens (increment) and closes in a later turn while the increment's write is
      // held by Redis: the decrement must not overtake it (it would be ignored, and the closed
      // socket counted for good). On a cluster the increment waits for its index write first.
      const counts = new RedisConnectionCounts(clients.command, backend().freshKeys());
      const key = unique('key');
      await pause();
      try {
        const opened = counts.increment('n1', key, 'room');
        await turn();
        await turn();
        const closed = counts.decrement('n1', key, 'room');
        await turn();
        await turn();
        await resume();
        await Promise.all([opened, closed]);
      } finally {
        await resume();
      }
      expect(await counts.sum(key)).toBe(0);
      expect(await counts.list(key)).toEqual({ items: [], total: 0 });
    });
  });
});
