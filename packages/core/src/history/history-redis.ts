import type { Publication } from '../broker/broker';
import { wholeOrZero } from './history';
import type { History, HistoryPage, HistoryQuery } from './history';
import type { Topic } from '../types';
import { guard, serverGeneration } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import { historyRead } from '../redis/history-scripts';
import type { RedisKeys } from '../redis/keys';
import { decodePublication } from '../redis/publication-codec';

/**
 * Topic streams in Redis, read side: one script reads a topic's position and its entries
 * atomically and writes nothing (history-scripts.ts). `RedisBroker.publish(publication,
 * retention)` writes them.
 */
export class RedisHistory implements History {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    /** The TTL empty epochs are judged by (`HISTORY_TTL_SECONDS`) unless the query names one. */
    private readonly defaultTtlSeconds = 120,
  ) {}

  async read(topic: Topic, query: HistoryQuery): Promise<HistoryPage> {
    const limit = wholeOrZero(query.limit);
    const first = query.since === undefined ? '' : String(wholeOrZero(query.since) + 1);
    const ttl = wholeOrZero(query.ttlSeconds ?? 0) || this.defaultTtlSeconds;
    const list = this.keys.historyStream(topic);
    const reply = (await guard(this.client, () => {
      const generation = serverGeneration(this.client, list);
      return historyRead.run(
        this.client,
        [this.keys.historyMeta(topic, generation), list],
        [query.at ?? '', ttl, first, limit, generation],
      );
    })) as [number, string, string[], string];
    const [offset, epoch, wires, follows] = reply;
    const publications: Publication[] = [];
    for (const wire of wires) {
      const publication = decodePublication(topic, wire);
      if (publication) publications.push(publication);
    }
    return follows ? { offset, epoch, publications, follows } : { offset, epoch, publications };
  }
}
