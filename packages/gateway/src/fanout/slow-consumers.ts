import type { ConnectionState } from '../connections/connection';
import { closeConnection } from './send';

/** How often the sockets that received topic publications are checked. */
export const SLOW_CONSUMER_SWEEP_MS = 100;

/**
 * Closes slow consumers (4008) that uWS topic publishes made slow. A topic publish fans out in
 * C++ and tells nobody which sockets it left with buffered data, so every delivery to a topic
 * names the topic here (`delivered`), and a sweep `SLOW_CONSUMER_SWEEP_MS` later checks the
 * buffered amount of that topic's sockets only. A socket nothing was published to since the
 * last check can only have drained, so an idle node checks nothing and runs no timer, and a busy
 * one checks the sockets it wrote to rather than all of them. Frames sent to one socket
 * (`sendTo`) are checked where they are sent.
 */
export class SlowConsumers {
  /** The registry's sets of the topics delivered to since the last sweep (one per topic). */
  private readonly touched = new Set<ReadonlySet<ConnectionState>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly limitBytes: () => number) {}

  /**
   * Something was published to a topic's local uWS topics: its sockets (the registry's set,
   * `LocalTopic.sockets`) are checked at the next sweep.
   */
  delivered(sockets: ReadonlySet<ConnectionState>): void {
    if (sockets.size === 0 || this.stopped) return;
    this.touched.add(sockets);
    if (!this.timer) {
      this.timer = setTimeout(this.sweep, SLOW_CONSUMER_SWEEP_MS);
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.touched.clear();
  }

  private readonly sweep = (): void => {
    this.timer = undefined;
    const limit = this.limitBytes();
    const sets = [...this.touched];
    this.touched.clear();
    // A set the registry dropped meanwhile is empty. Closing a socket takes it out of its set
    // while the set is iterated, which a Set allows.
    for (const sockets of sets) {
      for (const state of sockets) {
        if (state.conn && state.conn.getBufferedAmount() >= limit) closeConnection(state, 'SLOW_CONSUMER');
      }
    }
  };
}
