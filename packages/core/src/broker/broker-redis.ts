import { randomUUID } from 'node:crypto';
import { parseControlCommand, parseControlReply, reportHandlerFailure } from './broker';
import type {
  Broker,
  BrokerHandlers,
  ControlAnswer,
  ControlCommand,
  ControlRequest,
  Publication,
  RequestedCommand,
} from './broker';
import { PendingRequests, replyTo } from './control-replies';
import { newEpoch } from '../history/epochs';
import type { HistoryRetention, StreamPosition } from '../history/history';
import type { NodeId, Topic } from '../types';
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
 * Fan-out through Redis pub/sub: one channel per topic, one control channel every node
 * subscribes to, and one reply channel per node (`requestControl`). On a cluster all are sharded
 * (SPUBLISH/SSUBSCRIBE): topics spread over the masters, and the control channel lives on one
 * master, so a publisher's commands stay in order (plain PUBLISH would go to a random node each
 * time and could overtake itself).
 *
 * A requested command expects as many replies as PUBLISH/SPUBLISH counted receivers: on a
 * standalone server (and Sentinel's master) every subscribed client; on a cluster the clients
 * subscribed on the master that holds the control channel's slot, which is where ioredis'
 * sharded subscriber of every node subscribes (it connects to each slot's master, never a
 * replica). One subscriber connection per process, so one reply per process.
 *
 * On a standalone server the broker restores its own subscriptions on every `ready` of the
 * subscriber connection (ioredis' autoResubscribe is off, so unsubscribes during an outage are
 * not resurrected). On a cluster, ioredis' sharded subscriber group restores them.
 */
export class RedisBroker implements Broker {
  private handlers: BrokerHandlers | undefined;
  /** pub/sub channel → topic, for every topic this node wants. */
  private readonly wanted = new Map<string, Topic>();
  /**
   * The last pub/sub channel a publication came on and its topic (`wanted`'s entry): a topic's
   * publications come in runs, and each message's channel is a new string, which a lookup in
   * `wanted` hashes again (about 650 instructions a message). Forgotten when `wanted` changes.
   */
  private lastChannel: string | undefined;
  private lastTopic: Topic | undefined;
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
  /** This node's reply channel (`requestControl`), built once as well. */
  private readonly replyChannel: string;
  /** Cluster only: the reply channel's first SSUBSCRIBE. */
  private readonly repliesSubscribed: Promise<void> = Promise.resolve();
  private readonly requests = new PendingRequests();

  /**
   * `nodeId` names the reply channel this broker's requests are answered on, and signs its own
   * replies; a random one when not given (tests). Two brokers with one id share replies
   * harmlessly: each counts those of its own requests only.
   */
  constructor(
    private readonly clients: RedisClients,
    private readonly keys: RedisKeys,
    private readonly nodeId: NodeId = `broker-${randomUUID()}`,
  ) {
    this.sharded = clients.target.kind === 'cluster';
    this.controlChannel = keys.control();
    this.replyChannel = keys.replies(nodeId);
    const { command } = clients;
    if (!(command instanceof Cluster)) this.streamPublishes = new StreamPublishes(command, keys);
    const { subscriber } = clients;
    subscriber.on(this.sharded ? 'smessage' : 'message', this.onMessage);
    subscriber.on('ready', this.resubscribe);
    if (this.sharded) {
      this.controlSubscribed = this.shardedSubscribe(keys.control()).catch(() => undefined);
      this.repliesSubscribed = this.shardedSubscribe(this.replyChannel).catch(() => undefined);
    } else if (subscriber.status === 'ready') this.resubscribe();
  }

  setHandlers(handlers: BrokerHandlers): void {
    this.handlers = handlers;
  }

  /** Resolves once the subscriber connection listens to every wanted channel (for start-up and tests). */
  async ready(): Promise<void> {
    const { subscriber } = this.clients;
    if (this.sharded) {
      await Promise.all([this.controlSubscribed, this.repliesSubscribed]);
      for (const channel of [this.controlChannel, this.replyChannel])
        if (this.pending.has(channel)) await this.shardedSubscribe(channel);
      return;
    }
    if (subscriber.status !== 'ready') await new Promise((resolve) => subscriber.once('ready', resolve));
    await subscriber.subscribe(this.controlChannel, this.replyChannel, ...this.wanted.keys());
  }

  async subscribe(topic: Topic): Promise<void> {
    const channel = this.keys.fanout(topic);
    this.wanted.set(channel, topic);
    this.lastChannel = undefined;
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
    this.lastChannel = undefined;
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
    await this.sendControl(controlCommand);
  }

  requestControl(controlCommand: RequestedCommand, deadlineMs: number): Promise<ControlAnswer> {
    return this.requests.request(controlCommand, this.nodeId, deadlineMs, this.sendControl);
  }

  /** Publishes a command; resolves the number of clients that received it (PUBLISH's answer). */
  private readonly sendControl = async (controlCommand: ControlCommand): Promise<number> => {
    const { command } = this.clients;
    const channel = this.controlChannel;
    const wire = JSON.stringify(controlCommand);
    this.streamPublishes?.flush();
    const receivers = await guard(command, () =>
      this.sharded ? command.spublish(channel, wire) : command.publish(channel, wire),
    );
    return Number(receivers);
  };

  /** Answers a requested command on its origin's reply channel; a reply lost is a partial count there. */
  private sendReply(request: ControlRequest, result: number | void): void {
    const { command } = this.clients;
    let channel: string;
    try {
      channel = this.keys.replies(request.origin);
    } catch {
      return; // an origin no reply channel can be named for (braces, `|`): nobody waits on it
    }
    const wire = JSON.stringify(replyTo(request.id, this.nodeId, result));
    guard(command, () =>
      this.sharded ? command.spublish(channel, wire) : command.publish(channel, wire),
    ).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    const { subscriber } = this.clients;
    subscriber.off('message', this.onMessage);
    subscriber.off('smessage', this.onMessage);
    subscriber.off('ready', this.resubscribe);
    this.wanted.clear();
    this.lastChannel = undefined;
    this.requests.close();
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
      subscriber
        .subscribe(this.controlChannel, this.replyChannel, ...this.wanted.keys())
        .then(restored, () => undefined);
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
    if (this.closed) return;
    if (channel === this.replyChannel) {
      const reply = parseControlReply(message);
      if (reply) this.requests.reply(reply);
      return;
    }
    const handlers = this.handlers;
    const control = channel === this.controlChannel;
    if (!handlers) {
      // A process without handlers (account API, CLI) holds no connections: it did nothing, and says so.
      if (control) this.replyWithoutHandlers(message);
      return;
    }
    try {
      if (control) {
        const parsed = parseControlCommand(message);
        if ('problem' in parsed) {
          handlers.dropped?.('control', parsed.problem);
          return;
        }
        const { request } = parsed.command;
        let result: number | void;
        try {
          result = handlers.control(parsed.command);
        } catch (error) {
          // No reply: the requester counts this node as not having answered.
          reportHandlerFailure(handlers, 'control', error);
          return;
        }
        if (request) this.sendReply(request, result);
        return;
      }
      const topic = channel === this.lastChannel ? this.lastTopic : this.wanted.get(channel);
      if (!topic) return; // unsubscribed while the message was on its way
      this.lastChannel = channel;
      this.lastTopic = topic;
      const publication = decodePublication(topic, message);
      if (publication) handlers.message(publication);
      else handlers.dropped?.('publication', 'undecodable');
    } catch (error) {
      reportHandlerFailure(handlers, control ? 'control' : 'publication', error);
    }
  };

  private replyWithoutHandlers(message: string): void {
    const parsed = parseControlCommand(message);
    if ('command' in parsed && parsed.command.request) this.sendReply(parsed.command.request, 0);
  }
}
