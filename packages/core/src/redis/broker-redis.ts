import type { Broker, BrokerHandlers, ControlCommand, Publication } from '../broker/broker';
import type { Topic } from '../types';
import { guard } from './clients';
import type { RedisClients } from './clients';
import type { RedisKeys } from './keys';
import { decodePublication, encodePublication } from './publication-codec';

/**
 * Fan-out through Redis pub/sub: one channel per topic (sharded pub/sub on a cluster), control
 * commands on one plain channel that every node subscribes to.
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
  private closed = false;

  constructor(
    private readonly clients: RedisClients,
    private readonly keys: RedisKeys,
  ) {
    this.sharded = clients.target.kind === 'cluster';
    const { subscriber } = clients;
    subscriber.on(this.sharded ? 'smessage' : 'message', this.onMessage);
    if (this.sharded) subscriber.on('message', this.onMessage);
    subscriber.on('ready', this.resubscribe);
    if (this.sharded) subscriber.subscribe(keys.control()).catch(() => undefined);
    else if (subscriber.status === 'ready') this.resubscribe();
  }

  setHandlers(handlers: BrokerHandlers): void {
    this.handlers = handlers;
  }

  /** Resolves once the subscriber connection listens to every wanted channel (for start-up and tests). */
  async ready(): Promise<void> {
    const { subscriber } = this.clients;
    if (this.sharded) {
      await subscriber.subscribe(this.keys.control());
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
      this.pending.add(channel);
      await guard(subscriber, () => subscriber.ssubscribe(channel));
      this.pending.delete(channel);
    } else if (subscriber.status === 'ready') {
      await guard(subscriber, () => subscriber.subscribe(channel));
    }
  }

  async unsubscribe(topic: Topic): Promise<void> {
    const channel = this.keys.fanout(topic);
    if (!this.wanted.delete(channel)) return;
    this.pending.delete(channel);
    const { subscriber } = this.clients;
    if (this.sharded) await subscriber.sunsubscribe(channel).catch(() => undefined);
    else if (subscriber.status === 'ready') await subscriber.unsubscribe(channel).catch(() => undefined);
  }

  async publish(publication: Publication): Promise<void> {
    const channel = this.keys.fanout(publication.topic);
    const wire = encodePublication(publication);
    const { command } = this.clients;
    await guard(command, () =>
      this.sharded ? command.spublish(channel, wire) : command.publish(channel, wire),
    );
  }

  async publishControl(controlCommand: ControlCommand): Promise<void> {
    const { command } = this.clients;
    await guard(command, () => command.publish(this.keys.control(), JSON.stringify(controlCommand)));
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
    if (!this.sharded) {
      subscriber.subscribe(this.keys.control(), ...this.wanted.keys()).catch(() => undefined);
      return;
    }
    // ioredis restores what it subscribed itself; only the calls that never reached it are left.
    for (const channel of this.pending) {
      subscriber.ssubscribe(channel).then(
        () => this.pending.delete(channel),
        () => undefined,
      );
    }
  };

  private readonly onMessage = (channel: string, message: string): void => {
    const handlers = this.handlers;
    if (this.closed || !handlers) return;
    if (channel === this.keys.control()) {
      let command: ControlCommand;
      try {
        command = JSON.parse(message) as ControlCommand;
      } catch {
        return;
      }
      handlers.control(command);
      return;
    }
    const topic = this.wanted.get(channel);
    const publication = topic && decodePublication(topic, message);
    if (publication) handlers.message(publication);
  };
}
