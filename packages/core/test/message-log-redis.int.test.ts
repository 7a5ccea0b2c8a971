import { RedisBroker } from '../src/broker/broker-redis';
import type { RedisClients } from '../src/redis/clients';
import { RedisMessageLog } from '../src/logs/message-log-redis';
import type { Topic } from '../src/types';
import { describeMessageLogContract } from './contracts/message-log.contract';
import { describeEachRedis } from './support/redis-targets';
import { apiLogRecord } from './support/log-records';
import { unique } from './support/wait';

describeEachRedis((backend) => {
  let clients: RedisClients;
  beforeAll(async () => {
    clients = await backend().clients();
  });
  describeMessageLogContract(
    'redis',
    async (capacity) => new RedisMessageLog(clients.command, backend().freshKeys(), capacity),
  );

  describe('appends riding in the publish script (standalone)', () => {
    it('are in the log once the publish resolves, trimmed like other appends; refused on a cluster', async () => {
      const keys = backend().freshKeys();
      const broker = new RedisBroker(clients, keys);
      await broker.ready();
      const log = new RedisMessageLog(clients.command, keys, 3);
      const topic: Topic = { key: unique('key'), protocol: 'v3', channel: 'room' };
      const publish = (message: string) =>
        broker.publish(
          { topic, body: message, origin: 'n1', source: 'api' },
          { size: 2, ttlSeconds: 30 },
          log.ridingAppend(topic.key, apiLogRecord(message)),
        );
      try {
        if (backend().target.kind === 'cluster') {
          await expect(publish('m1')).rejects.toThrow(/cluster/);
          expect(await log.recent(topic.key)).toEqual([]);
          return;
        }
        expect(await publish('m1')).toMatchObject({ offset: 1 });
        expect(await log.recent(topic.key)).toEqual([apiLogRecord('m1')]);
        await log.append(topic.key, apiLogRecord('m2'));
        for (let i = 3; i <= 150; i++) await publish(`m${i}`);
        expect((await log.recent(topic.key)).map((r) => r.message)).toEqual(['m150', 'm149', 'm148']);
        // Trimmed back once past capacity + slack, as `append` does: never longer than that.
        expect(await clients.command.llen(keys.log(topic.key))).toBeLessThanOrEqual(3 + 100);
      } finally {
        await broker.close();
      }
    });
  });
});
