import { historyRetention } from '@switchboard/core';
import type { ConnId, HistoryPage, Publication, Topic } from '@switchboard/core';
import type { ConnectionState, Subscription } from '../connections/connection';
import { sendTo } from '../fanout/send';
import { topicId } from '@switchboard/core';
import { localTopicOf } from '../fanout/topics';
import type { Resume } from './resume';
import { TopicStream } from './topic-stream';
import type { Joiner, PositionReport } from './topic-stream';
import type { Delivery } from '../fanout/delivery';
import type { ListGate } from '../fanout/list-gate';
import type { NodeDeps } from '../deps';

/** What the streams take: history reads from the engine, and the node's delivery. */
export interface StreamDeps extends Pick<NodeDeps, 'config' | 'engine' | 'logger'> {
  readonly delivery: Delivery;
  readonly listGate: ListGate;
}

export const HISTORY_UNAVAILABLE =
  'History is unavailable (the engine is unreachable); try again with since and epoch';

/** History reads of a catching-up subscription, per page (the REST maximum too). */
export const HISTORY_PAGE = 100;

/** An opted-in subscription whose history read is done, ready to start in one turn. */
export interface CatchUp {
  readonly state: ConnectionState;
  readonly sub: Subscription;
  readonly report: PositionReport;
  readonly missed: readonly Publication[];
  /** When (`performance.now()`) the history read that gave `report` was sent. */
  readonly readAt: number;
}

interface Attachment {
  readonly stream: TopicStream;
  joiner: Joiner | undefined;
}

/**
 * The streams of this node's opted-in subscriptions (docs/protocol.md, "History and recovery"):
 * a subscription reads history, gets `system::position` and what it missed, then is handed
 * over to its topic's stream, which delivers live publications in offset order. Sockets that
 * did not opt in never touch this module.
 */
export class Streams {
  private readonly streams = new Map<string, TopicStream>();
  private readonly attached = new Map<Subscription, Attachment>();
  /** Connections with opted-in subscriptions: a stream publication names its sender. */
  private readonly senders = new Map<ConnId, ConnectionState>();

  constructor(private readonly ctx: StreamDeps) {}

  /** Every stream publication the broker delivers (its own node's included). */
  receive(publication: Publication): void {
    if (this.streams.size === 0) return;
    this.streams.get(topicId(publication.topic))?.receive(publication);
  }

  /**
   * Reads where `sub` stands: the position, and with `resume` the publications it missed.
   * Rejects (engine unreachable) after undoing its own bookkeeping.
   */
  async prepare(state: ConnectionState, sub: Subscription, resume: Resume | undefined): Promise<CatchUp> {
    const stream = this.streamOf(
      sub.topic,
      historyRetention(state.record, this.ctx.config, sub.topic).ttlSeconds,
    );
    stream.subscribers++;
    this.attached.set(sub, { stream, joiner: undefined });
    this.senders.set(state.id, state);
    try {
      return await this.catchUp(state, sub, resume, stream);
    } catch (error) {
      this.detach(state, sub);
      throw error;
    }
  }

  /** Position frame, then the missed publications, then live: all in this turn. */
  start(catchUp: CatchUp): void {
    const { state, sub, report, missed, readAt } = catchUp;
    const attachment = this.attached.get(sub);
    if (!attachment || state.closed) return;
    const { dialect } = state;
    sendTo(
      this.ctx,
      state,
      dialect.positionFrame(sub.channel, report, sub.primary ? undefined : sub.channel),
    );
    // With presence, the events topic waits for the member_list (fanout/list-gate.ts).
    if (sub.presence) this.ctx.listGate.hold(state, sub);
    else state.conn?.subscribe(localTopicOf(dialect.variants, sub.topic, sub.primary, 'events'));
    for (const publication of missed) this.sendOne(state, sub, publication);
    const joiner: Joiner = {
      position: report,
      readAt,
      send: (publication) => this.sendOne(state, sub, publication),
      lost: (lost) => sendTo(this.ctx, state, this.position(state, sub, lost)),
      join: () => {
        attachment.joiner = undefined;
        if (!state.closed)
          state.conn?.subscribe(localTopicOf(dialect.variants, sub.topic, sub.primary, 'stream'));
      },
    };
    attachment.joiner = joiner;
    attachment.stream.handOver(joiner);
  }

  /** Ends an opted-in subscription's part here (its uWS topics are left by the caller). */
  detach(state: ConnectionState, sub: Subscription): void {
    const attachment = this.attached.get(sub);
    if (!attachment) return;
    this.attached.delete(sub);
    const { stream, joiner } = attachment;
    if (joiner) stream.forget(joiner);
    if (--stream.subscribers === 0) {
      stream.close();
      this.streams.delete(topicId(sub.topic));
    }
    if (!state.subs.values().some((other) => other !== sub && this.attached.has(other)))
      this.senders.delete(state.id);
  }

  /** The engine connection is lost: every stream holds what arrives until `resync`. */
  suspend(): void {
    for (const stream of this.streams.values()) stream.suspend();
  }

  /** After the broker reconnected: every stream checks history for what it may have lost. */
  resync(): void {
    for (const stream of this.streams.values()) stream.resync();
  }

  get size(): number {
    return this.streams.size;
  }

  /** The topic's stream; `ttlSeconds` is the key's retention, by which empty epochs are judged. */
  private streamOf(topic: Topic, ttlSeconds: number): TopicStream {
    const id = topicId(topic);
    let stream = this.streams.get(id);
    if (!stream) {
      stream = new TopicStream(
        {
          read: (since, at) =>
            this.ctx.engine.history.read(topic, {
              ...(since === undefined ? { limit: 0 } : { since, limit: HISTORY_PAGE }),
              ttlSeconds,
              ...(at === undefined ? {} : { at }),
            }),
          deliver: (publication) =>
            this.ctx.delivery.deliverInOrder(
              topic,
              publication,
              publication.sender === undefined ? undefined : this.senders.get(publication.sender),
            ),
          announce: (report) => this.ctx.delivery.announce(topic, report),
          readFailed: (error) =>
            this.ctx.logger.warn(
              { err: error, channel: topic.channel },
              'history read failed while filling a gap; retrying',
            ),
        },
        ttlSeconds * 1000,
      );
      this.streams.set(id, stream);
    }
    return stream;
  }

  private async catchUp(
    state: ConnectionState,
    sub: Subscription,
    resume: Resume | undefined,
    stream: TopicStream,
  ): Promise<CatchUp> {
    const { history } = this.ctx.engine;
    const retention = historyRetention(state.record, this.ctx.config, sub.topic);
    const { ttlSeconds } = retention;
    // History of an epoch this node's stream left (two masters for a moment) is never resumed
    // from nor started at: the subscription starts at the stream's position instead.
    const current = (page: HistoryPage) =>
      stream.hasLeft(page.epoch) && stream.position ? stream.position : undefined;
    const readAt = performance.now();
    if (!resume) {
      // Judged against the stream's epoch: a topic still empty answers the stream's empty epoch.
      const at = stream.position?.epoch;
      const page = await history.read(sub.topic, {
        limit: 0,
        ttlSeconds,
        ...(at === undefined ? {} : { at }),
      });
      const { epoch, offset } = current(page) ?? page;
      return { state, sub, report: { epoch, offset, missed: 0 }, missed: [], readAt };
    }
    const { since } = resume;
    let page: HistoryPage = await history.read(sub.topic, {
      since,
      limit: HISTORY_PAGE,
      ttlSeconds,
      at: resume.epoch,
    });
    const left = current(page);
    const { epoch, offset } = left ?? page;
    const unrecoverable = (): CatchUp => ({
      state,
      sub,
      report: { epoch, offset, recovered: false, missed: 0 },
      missed: [],
      readAt,
    });
    // A resume from an empty epoch goes on in the epoch that follows it (the engine vouches that
    // it is the topic's first stream since that read), from the same offsets.
    const sameEpoch = resume.epoch === epoch || page.follows === resume.epoch;
    if (left || !sameEpoch || since > offset || retention.size === 0) return unrecoverable();
    const missed: Publication[] = [];
    let next = since + 1;
    while (next <= offset) {
      if (page.publications.length === 0) return unrecoverable();
      for (const publication of page.publications) {
        if (next > offset) break;
        if (publication.offset !== next || publication.epoch !== epoch) return unrecoverable();
        missed.push(publication);
        next++;
      }
      if (next > offset) break;
      page = await history.read(sub.topic, { since: next - 1, limit: HISTORY_PAGE, ttlSeconds, at: epoch });
      if (page.epoch !== epoch) return unrecoverable();
    }
    return {
      state,
      sub,
      report: { epoch, offset, recovered: true, missed: offset - since },
      missed,
      readAt,
    };
  }

  private sendOne(state: ConnectionState, sub: Subscription, publication: Publication): void {
    if (publication.sender === state.id && !state.notifySelf) return;
    const { dialect } = state;
    const frame = dialect.offsetFrame(
      publication,
      dialect.isObject(publication),
      publication.offset ?? 0,
      sub.primary ? undefined : sub.channel,
    );
    sendTo(this.ctx, state, frame);
  }

  private position(state: ConnectionState, sub: Subscription, report: PositionReport): string {
    return state.dialect.positionFrame(sub.channel, report, sub.primary ? undefined : sub.channel);
  }
}
