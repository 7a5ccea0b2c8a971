/**
 * When the periodic slow-consumer check (docs/protocol.md, Limits: every 100 ms for fan-out)
 * has anything to look at. A socket's send buffer grows only when something is written to it:
 * direct sends check their own socket as they send (send.ts), and topic publishes (fan-out, done
 * by uWS in C++) are checked by sweeping every connection. With no publish since the last
 * sweeps no buffer grew, and those sweeps already closed every socket over the limit, so the
 * sweep is skipped: an idle node with 16,700 sockets spent about 30 ms of CPU a second on it
 * (one native call per socket, ten times a second), 10% of a core at 50,000.
 *
 * A publish keeps the next two sweeps due: uWS may write a publish's frames after a sweep that
 * runs in the same event-loop turn as the publish, and the second sweep sees them.
 */
export class SlowConsumerSweeps {
  private due = 0;

  /** A topic publish went out: the next two sweeps check every connection. */
  noteFanOut(): void {
    this.due = 2;
  }

  /** Whether this sweep checks every connection (it counts as one of the due sweeps). */
  takeDue(): boolean {
    if (this.due === 0) return false;
    this.due--;
    return true;
  }
}
