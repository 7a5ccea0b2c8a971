import { topicId } from '../types';
import type { HistoryRetention, StreamPosition } from '../history/history';
import { MemoryHistory } from '../history/history-memory';
import type { Topic } from '../types';
import { reportHandlerFailure } from './broker';
import type {
  Broker,
  BrokerHandlers,
  ControlAnswer,
  ControlCommand,
  ControlReply,
  Publication,
  RequestedCommand,
} from './broker';
import { PendingRequests, replyTo } from './control-replies';

let memoryNodes = 0;

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
  /** Hands `command` to every member; resolves how many received it (the engine's receiver count). */
  control(command: ControlCommand): number {
    const members = [...this.members];
    for (const broker of members) {
      const result = broker.receiveControl(command);
      const { request } = command;
      if (request && result !== undefined)
        this.reply(request.origin, replyTo(request.id, broker.nodeId, result));
    }
    return members.length;
  }
  reply(origin: string, reply: ControlReply): void {
    for (const broker of this.members) if (broker.nodeId === origin) broker.receiveReply(reply);
  }
}

export class MemoryBroker implements Broker {
  private handlers: BrokerHandlers | undefined;
  private readonly topics = new Set<string>();
  private readonly requests = new PendingRequests();

  /** `nodeId` names this broker on the bus for replies; unique per broker unless given. */
  constructor(
    private readonly bus: MemoryBus = new MemoryBus(),
    readonly nodeId: string = `memory-${++memoryNodes}`,
  ) {
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

  requestControl(command: RequestedCommand, deadlineMs: number): Promise<ControlAnswer> {
    return this.requests.request(command, this.nodeId, deadlineMs, async (sent) => this.bus.control(sent));
  }

  async close(): Promise<void> {
    this.bus.leave(this);
    this.topics.clear();
    this.requests.close();
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

  /**
   * @internal called by the bus. Resolves the handler's count, 0 without handlers (this process
   * holds no connections), `undefined` when the handler threw (then no reply goes out).
   */
  receiveControl(command: ControlCommand): number | undefined {
    const handlers = this.handlers;
    if (!handlers) return 0;
    try {
      return handlers.control(command) ?? 0;
    } catch (error) {
      reportHandlerFailure(handlers, 'control', error);
      return undefined;
    }
  }

  /** @internal called by the bus */
  receiveReply(reply: ControlReply): void {
    this.requests.reply(reply);
  }
}
