import type { Redis } from 'ioredis';
import { newEpoch } from '../history/epochs';
import type { StreamPosition } from '../history/history';
import type { Topic } from '../types';
import { atTurnEnd, guard, serverGeneration } from './clients';
import type { RedisKeys } from './keys';
import { positionFrom, runHistoryPublish, runHistoryPublishBatch } from './history-scripts';
import type { LogAppend } from '../logs/message-log-redis';

/** One stream publication waiting for the end of its turn. */
export interface StreamPublish {
  /** Its meta key is built when the call leaves, with the server's generation then. */
  readonly topic: Topic;
  readonly list: string;
  /** `publicationHead` and `publicationTail` (publication-codec.ts). */
  readonly head: string;
  readonly tail: string;
  readonly size: number;
  readonly ttlSeconds: number;
  /** The stream's byte cap (0: none). */
  readonly maxBytes: number;
  /** The topic's fan-out channel. */
  readonly channel: string;
  readonly log: LogAppend | undefined;
}

interface Pending {
  readonly publish: StreamPublish;
  readonly resolve: (position: StreamPosition) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Bounds of one batch, so one script never holds Redis for long (each publication costs it
 * about 10 µs): past either, the batch goes out at once and a new one starts.
 */
export const MAX_BATCH_PUBLICATIONS = 200;
export const MAX_BATCH_BYTES = 512 * 1024;

/**
 * The stream publications of one event-loop turn on a standalone server, sent as one script call
 * (history-scripts.ts) just before the connection's coalesced writes leave at the end of the
 * turn: at high rates a gateway accepts several publishes per turn, and each script call costs
 * Redis and ioredis a fixed overhead far above the publication's own work. Each caller still
 * resolves with its own position, or rejects when the call failed (all of a batch's callers do,
 * as they would have one by one). A batch of one runs the single-publication script.
 *
 * A publication that finds the connection quiet (none of these calls unanswered, none waiting)
 * goes out at once, alone, without waiting for the end of the turn: at moderate rates that is
 * every publication, and waiting would batch nothing. Once one is unanswered, the ones after it
 * wait for the end of their turn and leave together.
 *
 * Order: calls leave in the order they were made, on the one command connection (a publication
 * goes out at once only when nothing waits), and a batch's publications are made in call order;
 * so offsets per topic follow the calls. A command that must stay behind the stream publications
 * issued before it (a plain or control publish on the same connection) calls `flush` first.
 */
export class StreamPublishes {
  private pending: Pending[] = [];
  private bytes = 0;
  private scheduled = false;
  /** Script calls sent and not answered yet. */
  private unanswered = 0;

  constructor(
    private readonly client: Redis,
    private readonly keys: RedisKeys,
  ) {}

  add(publish: StreamPublish): Promise<StreamPosition> {
    if (this.unanswered === 0 && this.pending.length === 0)
      return new Promise<StreamPosition>((resolve, reject) => this.send({ publish, resolve, reject }, false));
    const bytes = publish.head.length + publish.tail.length + (publish.log?.record.length ?? 0);
    if (
      this.pending.length > 0 &&
      (this.pending.length >= MAX_BATCH_PUBLICATIONS || this.bytes + bytes > MAX_BATCH_BYTES)
    ) {
      this.flush();
    }
    return new Promise<StreamPosition>((resolve, reject) => {
      this.pending.push({ publish, resolve, reject });
      this.bytes += bytes;
      if (!this.scheduled) {
        this.scheduled = true;
        atTurnEnd(this.client, this.atTurnEnd);
      }
    });
  }

  /** Sends what is pending now (a no-op when nothing is). */
  flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.bytes = 0;
    const only = batch.length === 1 ? batch[0] : undefined;
    if (only) this.send(only, true);
    else this.sendMany(batch);
  }

  private readonly atTurnEnd = (): void => {
    this.scheduled = false;
    this.flush();
  };

  private readonly answered = (): void => {
    this.unanswered -= 1;
  };

  /** One publication, by the single-publication script. */
  private send({ publish: p, resolve, reject }: Pending, coalesce: boolean): void {
    const { client, keys } = this;
    const args = [p.head, p.tail, p.size, p.ttlSeconds, newEpoch(), p.channel, p.maxBytes];
    const { log } = p;
    this.unanswered += 1;
    guard(
      client,
      () => {
        const meta = keys.historyMeta(p.topic, serverGeneration(client, p.list));
        return log
          ? runHistoryPublish(
              client,
              [meta, p.list, log.list],
              [...args, log.record, log.trimAbove, log.trimTo],
            )
          : runHistoryPublish(client, [meta, p.list], args);
      },
      coalesce,
    ).then(
      (reply) => {
        this.answered();
        resolve(positionFrom(client, reply));
      },
      (error: unknown) => {
        this.answered();
        reject(error);
      },
    );
  }

  private sendMany(batch: Pending[]): void {
    const { client } = this;
    const n = batch.length;
    /** The script's keys and arguments, built when the call leaves (see `send`), in runs. */
    const call = (): Promise<unknown> => {
      const keys: string[] = [];
      const generation = serverGeneration(client, '');
      const args: Array<string | number> = [newEpoch(), 0, 0];
      /** Log LIST → its index j (1-based) in the batch. */
      const logs = new Map<string, number>();
      const trims: number[] = [];
      let runs = 0;
      for (let i = 0; i < n;) {
        const p = (batch[i] as Pending).publish;
        let end = i + 1;
        while (end < n && sameRun(p, (batch[end] as Pending).publish)) end += 1;
        keys.push(this.keys.historyMeta(p.topic, generation), p.list);
        let j = 0;
        const { log } = p;
        if (log) {
          j = logs.get(log.list) ?? 0;
          if (j === 0) {
            j = logs.size + 1;
            logs.set(log.list, j);
            trims.push(log.trimAbove, log.trimTo);
          }
        }
        args.push(end - i, p.size, p.ttlSeconds, p.channel, p.maxBytes, j);
        for (; i < end; i++) {
          const q = (batch[i] as Pending).publish;
          if (q.log) args.push(q.head, q.tail, q.log.record);
          else args.push(q.head, q.tail);
        }
        runs += 1;
      }
      keys.push(...logs.keys());
      args[1] = runs;
      args[2] = logs.size;
      args.push(...trims);
      return runHistoryPublishBatch(client, keys, args);
    };
    this.unanswered += 1;
    guard(client, call).then(
      (reply) => {
        this.answered();
        const positions = reply as unknown[];
        for (let i = 0; i < n; i++) (batch[i] as Pending).resolve(positionFrom(client, positions[i]));
      },
      (error: unknown) => {
        this.answered();
        for (const p of batch) p.reject(error);
      },
    );
  }
}

/**
 * Whether `b` continues the run of `a` in one batch call (history-scripts.ts): the same stream
 * (its LIST names the topic, as its meta does), retention, fan-out channel and message log.
 */
function sameRun(a: StreamPublish, b: StreamPublish): boolean {
  return (
    a.list === b.list &&
    a.size === b.size &&
    a.ttlSeconds === b.ttlSeconds &&
    a.maxBytes === b.maxBytes &&
    a.channel === b.channel &&
    a.log?.list === b.log?.list
  );
}
