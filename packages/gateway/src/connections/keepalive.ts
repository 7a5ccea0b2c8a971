import type { Config } from '@switchboard/core';
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
 * One shared sweep and no timer or object per socket: a watched socket costs a `Set` entry, and
 * a pinged one a `Map` entry until it answers (docs/performance.md, "Idle memory per
 * connection").
 */
export class Keepalive {
  private readonly watched = new Set<ConnectionState>();
  /** When the server's ping went out to each socket that has not answered it yet. */
  private readonly pinged = new Map<ConnectionState, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: { readonly config: Config }) {}

  add(state: ConnectionState): void {
    if (!state.dialect.keepalive) return;
    state.rateWindowStart = Date.now();
    this.watched.add(state);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.timer.unref();
    }
  }

  delete(state: ConnectionState): void {
    this.pinged.delete(state);
    if (!this.watched.delete(state) || this.watched.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.watched.clear();
    this.pinged.clear();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    const now = Date.now();
    const { config } = this.ctx;
    for (const state of this.watched) {
      const keepalive = state.dialect.keepalive;
      if (!keepalive || state.closed) continue;
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
  }
}
