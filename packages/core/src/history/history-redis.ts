import type { Publication } from '../broker/broker';
import { wholeOrZero } from './history';
import type { History, HistoryPage, HistoryQuery } from './history';
import { newEpoch } from './epochs';
import type { Topic } from '../types';
import { guard, serverGeneration } from '../redis/clients';
import type { RedisClient } from '../redis/clients';
import { historyRead } from '../redis/history-scripts';
import type { RedisKeys } from '../redis/keys';
import { decodePublication } from '../redis/publication-codec';

/**
 * Topic streams in Redis, read side: one script reads a topic's position and its entries
 * atomically (history-scripts.ts). `RedisBroker.publish(publication, retention)` writes them.
 */
export class RedisHistory implements History {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    /** TTL of the stream a read starts (`HISTORY_TTL_SECONDS`) unless the query names one. */
    private readonly defaultTtlSeconds = 120,
  ) {}

  async read(topic: Topic, query: HistoryQuery): Promise<HistoryPage> {
    const limit = wholeOrZero(query.limit);
    const first = query.since === undefined ? '' : String(wholeOrZero(query.since) + 1);
    const ttl = wholeOrZero(query.ttlSeconds ?? 0) || this.defaultTtlSeconds;
    const list = this.keys.historyStream(topic);
    const reply = (await guard(this.client, () =>
      historyRead.run(
        this.client,
        [this.keys.historyMeta(topic, serverGeneration(this.client, list)), list],
        [newEpoch(), ttl, first, limit],
      ),
    )) as [number, string, string[]];
    const [offset, epoch, wires] = reply;
    const publications: Publication[] = [];
    for (const wire of wires) {
      const publication = decodePublication(topic, wire);
      if (publication) publications.push(publication);
    }
    return { offset, epoch, publications };
  }
}
