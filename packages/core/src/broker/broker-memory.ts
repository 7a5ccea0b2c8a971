import { topicId } from '../types';
import type { HistoryRetention, StreamPosition } from '../history/history';
import { MemoryHistory } from '../history/history-memory';
import type { Topic } from '../types';
import { reportHandlerFailure } from './broker';
import type { Broker, BrokerHandlers, ControlCommand, Publication } from './broker';

/**
 * The in-process bus several memory brokers share, standing in for Redis pub/sub: one per
 * process in production (single node), several nodes on one bus in tests. Its brokers publish
 * into one set of topic streams, `history`.
 */
export class MemoryBus {
  private readonly members = new Set<MemoryBroker>();
  constructor(readonly history: MemoryHistory = new MemoryHistory()) {}
  join(broker: MemoryBroker): void {
    this.members.add(broker);
  }
  leave(broker: MemoryBroker): void {
    this.members.delete(broker);
  }
  deliver(publication: Publication): void {
    const id = topicId(publication.topic);
    for (const broker of this.members) broker.receive(id, publication);
  }
  control(command: ControlCommand): void {
    for (const broker of this.members) broker.receiveControl(command);
  }
}

export class MemoryBroker implements Broker {
  private handlers: BrokerHandlers | undefined;
  private readonly topics = new Set<string>();

  constructor(private readonly bus: MemoryBus = new MemoryBus()) {
    bus.join(this);
  }

  setHandlers(handlers: BrokerHandlers): void {
    this.handlers = handlers;
  }

  async subscribe(topic: Topic): Promise<void> {
    this.topics.add(topicId(topic));
  }

  async unsubscribe(topic: Topic): Promise<void> {
    this.topics.delete(topicId(topic));
  }

  async publish(publication: Publication, retention?: HistoryRetention): Promise<StreamPosition | undefined> {
    if (!retention) {
      this.bus.deliver(publication);
      return undefined;
    }
    const stamped = this.bus.history.append(publication, retention);
    this.bus.deliver(stamped);
    return { offset: stamped.offset, epoch: stamped.epoch };
  }

  async publishControl(command: ControlCommand): Promise<void> {
    this.bus.control(command);
  }

  async close(): Promise<void> {
    this.bus.leave(this);
    this.topics.clear();
  }

  /** @internal called by the bus */
  receive(id: string, publication: Publication): void {
    const handlers = this.handlers;
    if (!handlers || !this.topics.has(id)) return;
    // A handler's throw stays with this node: it must not fail the publisher's `publish`.
    try {
      handlers.message(publication);
    } catch (error) {
      reportHandlerFailure(handlers, 'publication', error);
    }
  }

  /** @internal called by the bus */
  receiveControl(command: ControlCommand): void {
    const handlers = this.handlers;
    if (!handlers) return;
    try {
      handlers.control(command);
    } catch (error) {
      reportHandlerFailure(handlers, 'control', error);
    }
  }
}
