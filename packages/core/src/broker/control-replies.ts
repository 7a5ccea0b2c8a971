import { randomUUID } from 'node:crypto';
import type { ControlAnswer, ControlCommand, ControlReply, RequestedCommand } from './broker';
import type { NodeId } from '../types';

/**
 * At most this many requests wait for replies at once per broker. Each is forgotten at its
 * deadline (seconds), so only a flood of kicks gets near it; past it a command goes out without a
 * request and its answer is partial (nothing counted) instead of the waiting list growing.
 */
export const MAX_PENDING_REQUESTS = 10_000;

interface Pending {
  total: number;
  replies: number;
  /** The engine's receiver count, once the publish answered. */
  receivers: number | undefined;
  settled: boolean;
  readonly resolve: (answer: ControlAnswer) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * The requested control commands a broker waits on replies for (`Broker.requestControl`, shared
 * by every implementation). A request is open from before its command is published (a reply may
 * come back before the publish's own answer does) until every receiver replied or its deadline
 * passed, whichever is first; then it is removed, and later replies to it are ignored.
 */
export class PendingRequests {
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly limit = MAX_PENDING_REQUESTS) {}

  /** Requests waiting now (bounded by `limit`; for tests and metrics). */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Publishes `command` with a request (through `publish`, which resolves the engine's receiver
   * count) and resolves what the replies add up to. Rejects when `publish` does.
   */
  async request(
    command: RequestedCommand,
    origin: NodeId,
    deadlineMs: number,
    publish: (command: ControlCommand) => Promise<number>,
  ): Promise<ControlAnswer> {
    if (this.pending.size >= this.limit) {
      const receivers = await publish(command);
      return { total: 0, replies: 0, receivers, complete: receivers === 0 };
    }
    const id = randomUUID();
    let entry!: Pending;
    const answer = new Promise<ControlAnswer>((resolve) => {
      entry = {
        total: 0,
        replies: 0,
        receivers: undefined,
        settled: false,
        resolve,
        timer: setTimeout(() => this.settle(id, entry), deadlineMs),
      };
    });
    // A kick must not keep a stopping process alive for its deadline.
    entry.timer.unref();
    this.pending.set(id, entry);
    let receivers: number;
    try {
      receivers = await publish({ ...command, request: { id, origin } });
    } catch (error) {
      clearTimeout(entry.timer);
      this.pending.delete(id);
      throw error;
    }
    entry.receivers = receivers;
    if (entry.replies >= receivers) this.settle(id, entry);
    return answer;
  }

  /** Counts a reply to an open request; a reply to none (late, foreign, repeated after the end) is ignored. */
  reply(reply: ControlReply): void {
    const entry = this.pending.get(reply.id);
    if (!entry) return;
    entry.total += reply.count;
    entry.replies++;
    if (entry.receivers !== undefined && entry.replies >= entry.receivers) this.settle(reply.id, entry);
  }

  /** Answers every open request with what it has (the broker is closing). */
  close(): void {
    for (const [id, entry] of [...this.pending]) this.settle(id, entry);
  }

  private settle(id: string, entry: Pending): void {
    if (entry.settled) return;
    entry.settled = true;
    clearTimeout(entry.timer);
    this.pending.delete(id);
    const receivers = entry.receivers ?? entry.replies;
    entry.resolve({
      total: entry.total,
      replies: entry.replies,
      receivers,
      complete: entry.receivers !== undefined && entry.replies >= entry.receivers,
    });
  }
}

/** The reply a node sends for a requested command its handler returned `result` for. */
export const replyTo = (id: string, node: NodeId, result: number | void): ControlReply => ({
  id,
  node,
  count: typeof result === 'number' && Number.isSafeInteger(result) && result > 0 ? result : 0,
});
