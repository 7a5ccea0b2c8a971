import type { Config } from '@switchboard/core';
import { socketClock } from './connection';
import type { ConnectionState } from './connection';
import { closeConnection, sendTo } from '../fanout/send';

/** How often open sockets of dialects with a keepalive are looked at. */
const SWEEP_MS = 1000;

/**
 * Server pings of the dialects that have them (`Dialect.keepalive`: Pusher's `pusher:ping` after
 * `activity_timeout` of silence, closed with 4201 when no frame follows within the pong timeout).
 * A socket's activity is its frame-rate window's start (`rateWindowStart`, set to the open time
 * here), which every frame more than a second after the window's start moves: a ping goes out
 * only after seconds of silence, so any frame after it moves the window past it. Sockets of other
 * dialects are never added, and no timer runs while none is watched.
 *
 * One shared sweep over the node's connections and no timer or object per socket: a watched
 * socket costs nothing beyond its state (its open time is `rateWindowStart`), and a pinged one a
 * `Map` entry until it answers (docs/performance.md, "Idle memory per connection"). The sweep
 * goes over every connection of the node, those of other dialects included, about 20 ns each,
 * once a second while any socket of a dialect with a keepalive is open.
 */
export class Keepalive {
  /** When the server's ping went out (`socketClock`) to each socket that has not answered it yet. */
  private readonly pinged = new Map<ConnectionState, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: {
      readonly config: Config;
      /** The node's open connections (the registry). */
      readonly connections: { all(): Iterable<ConnectionState> };
    },
  ) {}

  add(state: ConnectionState): void {
    if (!state.dialect.keepalive) return;
    state.rateWindowStart = socketClock();
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.timer.unref();
    }
  }

  delete(state: ConnectionState): void {
    this.pinged.delete(state);
  }

  stop(): void {
    this.pinged.clear();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    const now = socketClock();
    const { config } = this.ctx;
    let watched = 0;
    for (const state of this.ctx.connections.all()) {
      const keepalive = state.dialect.keepalive;
      if (!keepalive || state.closed) continue;
      watched += 1;
      const active = state.rateWindowStart;
      const pingAt = this.pinged.get(state);
      if (pingAt !== undefined) {
        if (active >= pingAt) this.pinged.delete(state);
        else if (now - pingAt >= keepalive.pongSeconds(config) * 1000) {
          closeConnection(state, keepalive.timeoutCode, keepalive.timeoutText);
          continue;
        } else continue;
      }
      if (now - active >= keepalive.idleSeconds(config) * 1000) {
        this.pinged.set(state, now);
        sendTo(this.ctx, state, keepalive.ping);
      }
    }
    // None left: the timer stops until the next one opens (`add`).
    if (watched === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
