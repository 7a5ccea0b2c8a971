import type { ChaosCluster } from './cluster';
import type { Topic } from './plan';

/**
 * The backend: one publish loop per topic through the balancer at a steady rate, recording the
 * position (offset, epoch) of every publish the cluster acknowledged. A publish answered
 * otherwise (503 while Redis is down, a connection refused while no gateway is in rotation…) may
 * or may not have happened, so no check relies on it.
 */

export interface Ack {
  readonly seq: number;
  readonly offset: number;
  readonly epoch: string;
  readonly ackedAt: number;
}

export const topicId = (topic: Topic): string => `${topic.protocol}/${topic.channel}`;

/** Unanswered publishes per topic before the loop waits for one (a stalled cluster). */
const MAX_IN_FLIGHT = 16;

export class Publisher {
  readonly acks = new Map<string, Ack[]>();
  /** Why publishes were not acknowledged, with how many each. */
  readonly failures = new Map<string, number>();
  attempts = 0;
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly startedAt = Date.now();

  constructor(
    private readonly cluster: ChaosCluster,
    readonly topics: readonly Topic[],
    /** Per topic: one publish every this many ms, whatever the answers take. */
    private readonly intervalMs: number,
    private readonly onAck: () => void,
  ) {
    for (const topic of topics) this.acks.set(topicId(topic), []);
    this.loops = topics.map((topic) => this.loop(topic));
  }

  acked(topic: Topic): Ack[] {
    return this.acks.get(topicId(topic)) ?? [];
  }

  get acknowledged(): number {
    return [...this.acks.values()].reduce((sum, list) => sum + list.length, 0);
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(topic: Topic): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    for (let seq = 1; this.running; seq++) {
      const due = this.startedAt + seq * this.intervalMs;
      if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      const sent = this.publish(topic, seq).finally(() => inFlight.delete(sent));
      inFlight.add(sent);
      const pause = due - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause)); // pacing
    }
    await Promise.all(inFlight);
  }

  private async publish(topic: Topic, seq: number): Promise<void> {
    this.attempts++;
    const path = topic.protocol === 'v3' ? '/api/publish' : '/api/v4/publish';
    let why: string | undefined;
    try {
      const response = await fetch(`${this.cluster.balancerUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          key: this.cluster.key.key,
          secret: this.cluster.key.secret,
          channel: topic.channel,
          message: { event: 'tick', data: { seq } },
        }),
        signal: AbortSignal.timeout(5000),
      });
      const text = await response.text();
      const body = parse(text);
      if (
        response.status === 200 &&
        typeof body?.['offset'] === 'number' &&
        typeof body['epoch'] === 'string'
      ) {
        this.acks
          .get(topicId(topic))!
          .push({ seq, offset: body['offset'], epoch: body['epoch'], ackedAt: Date.now() });
        this.onAck();
      } else
        why = `${response.status} ${
          typeof body?.['error'] === 'string'
            ? body['error']
            : `from the balancer: ${text
                .replace(/<[^>]*>/g, ' ')
                .trim()
                .split('\n')[0]!
                .slice(0, 80)}`
        }`;
    } catch (error) {
      const { name, message, cause } = error as Error & { cause?: { code?: string } };
      why =
        name === 'TimeoutError'
          ? 'no answer within 5 s'
          : `${message}${cause?.code ? ` (${cause.code})` : ''}`;
    }
    if (why !== undefined) this.failures.set(why, (this.failures.get(why) ?? 0) + 1);
  }
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
