import { parseControlCommand, reportHandlerFailure } from './broker';
import type { Broker, BrokerHandlers, ControlCommand, Publication } from './broker';
import { newEpoch } from '../history/epochs';
import type { HistoryRetention, StreamPosition } from '../history/history';
import type { Topic } from '../types';
import { Cluster } from 'ioredis';
import { coalesceWrites, guard, serverGeneration } from '../redis/clients';
import type { RedisClients } from '../redis/clients';
import type { RedisKeys } from '../redis/keys';
import { positionFrom, runHistoryPublish } from '../redis/history-scripts';
import type { LogAppend } from '../logs/message-log-redis';
import {
  decodePublication,
  encodePublication,
  publicationHead,
  publicationTail,
} from '../redis/publication-codec';
import { StreamPublishes } from '../redis/stream-publishes';

/**
 * Fan-out through Redis pub/sub: one channel per topic, and one control channel every node
 * subscribes to. On a cluster both are sharded (SPUBLISH/SSUBSCRIBE): topics spread over the
 * masters, and the control channel lives on one master, so a publisher's commands stay in order
 * (plain PUBLISH would go to a random node each time and could overtake itself).
 *
 * On a standalone server the broker restores its own subscriptions on every `ready` of the
 * subscriber connection (ioredis' autoResubscribe is off, so unsubscribes during an outage are
 * not resurrected). On a cluster, ioredis' sharded subscriber group restores them.
 */
export class RedisBroker implements Broker {
  private handlers: BrokerHandlers | undefined;
  /** pub/sub channel → topic, for every topic this node wants. */
  private readonly wanted = new Map<string, Topic>();
  /** Cluster only: wanted channels whose SSUBSCRIBE failed, retried on the next `ready`. */
  private readonly pending = new Set<string>();
  private readonly sharded: boolean;
  /** Cluster only: the control channel's first SSUBSCRIBE (queued until the cluster is ready). */
  private readonly controlSubscribed: Promise<void> = Promise.resolve();
  private closed = false;
  /** The subscriber connection was ready once: a later `ready` is a reconnect. */
  private readyBefore = false;
  /** Standalone only: this turn's stream publications, sent as one script call. */
  private readonly streamPublishes: StreamPublishes | undefined;
  /** The control channel's name, built once: every message received is compared with it. */
  private readonly controlChannel: string;

  constructor(
    private readonly clients: RedisClients,
    private readonly keys: RedisKeys,
  ) {
    this.sharded = clients.target.kind === 'cluster';
    this.controlChannel = keys.control();
    const { command } = clients;
    if (!(command instanceof Cluster)) this.streamPublishes = new StreamPublishes(command, keys);
    const { subscriber } = clients;
    subscriber.on(this.sharded ? 'smessage' : 'message', this.onMessage);
    subscriber.on('ready', this.resubscribe);
    if (this.sharded) this.controlSubscribed = this.shardedSubscribe(keys.control()).catch(() => undefined);
    else if (subscriber.status === 'ready') this.resubscribe();
  }

  setHandlers(handlers: BrokerHandlers): void {
    this.handlers = handlers;
  }

  /** Resolves once the subscriber connection listens to every wanted channel (for start-up and tests). */
  async ready(): Promise<void> {
    const { subscriber } = this.clients;
    if (this.sharded) {
      await this.controlSubscribed;
      if (this.pending.has(this.keys.control())) await this.shardedSubscribe(this.keys.control());
      return;
    }
    if (subscriber.status !== 'ready') await new Promise((resolve) => subscriber.once('ready', resolve));
    await subscriber.subscribe(this.keys.control(), ...this.wanted.keys());
  }

  async subscribe(topic: Topic): Promise<void> {
    const channel = this.keys.fanout(topic);
    this.wanted.set(channel, topic);
    const { subscriber } = this.clients;
    if (this.sharded) {
      if (subscriber.status !== 'ready') this.pending.add(channel);
      await guard(subscriber, () => this.shardedSubscribe(channel));
    } else if (subscriber.status === 'ready') {
      await guard(subscriber, () => subscriber.subscribe(channel));
    }
  }

  async unsubscribe(topic: Topic): Promise<void> {
    const channel = this.keys.fanout(topic);
    if (!this.wanted.delete(channel)) return;
    this.pending.delete(channel);
    const { subscriber } = this.clients;
    // Never waits out an outage: a cluster queues the call until it is back, a server drops it
    // (its resubscription after the outage no longer includes the channel).
    if (subscriber.status !== 'ready') {
      if (this.sharded) subscriber.sunsubscribe(channel).catch(() => undefined);
      return;
    }
    coalesceWrites(subscriber);
    const unsubscribing = this.sharded ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel);
    await unsubscribing.catch(() => undefined);
  }

  /**
   * `log` (standalone server and a `retention` only): a message-log append that the publish
   * script makes with the publication (history-scripts.ts), so it is in the log once `publish`
   * resolves, and only if the publication was accepted.
   */
  publish(
    publication: Publication,
    retention?: HistoryRetention,
    log?: LogAppend,
  ): Promise<StreamPosition | undefined> {
    const channel = this.keys.fanout(publication.topic);
    // Not async: the REST publish path passes this promise on as it is (no extra turns).
    if (retention) return this.publishToStream(publication, retention, channel, log);
    if (log) return Promise.reject(new Error('a log append rides only with a stream publication'));
    return this.publishPlain(channel, encodePublication(publication));
  }

  private async publishPlain(channel: string, wire: string): Promise<undefined> {
    const { command } = this.clients;
    // Behind the stream publications issued before it, as it would be without batching.
    this.streamPublishes?.flush();
    await guard(command, () =>
      this.sharded ? command.spublish(channel, wire) : command.publish(channel, wire),
    );
    return undefined;
  }

  /**
   * One script in the topic's slot counts, stores and publishes (history-scripts.ts). On a
   * standalone server the stream publications of one event-loop turn go out as one script call
   * (stream-publishes.ts): it shares the connection, hence the order, with plain and control
   * publishes, which send the pending batch before themselves. On a cluster the topics of one
   * turn are in different slots: one script per publication.
   */
  private publishToStream(
    publication: Publication,
    retention: HistoryRetention,
    channel: string,
    log: LogAppend | undefined,
  ): Promise<StreamPosition> {
    const { topic } = publication;
    if (log && this.sharded)
      return Promise.reject(new Error('a log append cannot ride with a publish on a cluster'));
    const list = this.keys.historyStream(topic);
    const head = publicationHead(publication);
    const tail = publicationTail(publication);
    const { size, ttlSeconds } = retention;
    const maxBytes = retention.maxBytes ?? 0;
    if (this.streamPublishes) {
      return this.streamPublishes.add({ topic, list, head, tail, size, ttlSeconds, maxBytes, channel, log });
    }
    const { command } = this.clients;
    const args = [head, tail, size, ttlSeconds, newEpoch(), channel, maxBytes];
    return guard(command, () =>
      runHistoryPublish(command, [this.keys.historyMeta(topic, serverGeneration(command, list)), list], args),
    ).then((reply) => positionFrom(command, reply));
  }

  async publishControl(controlCommand: ControlCommand): Promise<void> {
    const { command } = this.clients;
    const channel = this.keys.control();
    const wire = JSON.stringify(controlCommand);
    this.streamPublishes?.flush();
    await guard(command, () =>
      this.sharded ? command.spublish(channel, wire) : command.publish(channel, wire),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    const { subscriber } = this.clients;
    subscriber.off('message', this.onMessage);
    subscriber.off('smessage', this.onMessage);
    subscriber.off('ready', this.resubscribe);
    this.wanted.clear();
  }

  private readonly resubscribe = (): void => {
    if (this.closed) return;
    const { subscriber } = this.clients;
    const first = !this.readyBefore;
    this.readyBefore = true;
    const restored = (): void => {
      if (!first && !this.closed) this.handlers?.resubscribed?.();
    };
    if (!this.sharded) {
      subscriber.subscribe(this.keys.control(), ...this.wanted.keys()).then(restored, () => undefined);
      return;
    }
    // ioredis restores what it subscribed itself; only the calls that never reached it are left.
    Promise.all([...this.pending].map((channel) => this.shardedSubscribe(channel))).then(
      restored,
      () => undefined,
    );
  };

  /** SSUBSCRIBE, remembering the channel as pending until Redis confirmed it. */
  private async shardedSubscribe(channel: string): Promise<void> {
    this.pending.add(channel);
    await this.clients.subscriber.ssubscribe(channel);
    this.pending.delete(channel);
  }

  /** ioredis' message listener: nothing thrown here may escape, or the process ends. */
  private readonly onMessage = (channel: string, message: string): void => {
    const handlers = this.handlers;
    if (this.closed || !handlers) return;
    const control = channel === this.controlChannel;
    try {
      if (control) {
        const parsed = parseControlCommand(message);
        if ('problem' in parsed) handlers.dropped?.('control', parsed.problem);
        else handlers.control(parsed.command);
        return;
      }
      const topic = this.wanted.get(channel);
      if (!topic) return; // unsubscribed while the message was on its way
      const publication = decodePublication(topic, message);
      if (publication) handlers.message(publication);
      else handlers.dropped?.('publication', 'undecodable');
    } catch (error) {
      reportHandlerFailure(handlers, control ? 'control' : 'publication', error);
    }
  };
}
