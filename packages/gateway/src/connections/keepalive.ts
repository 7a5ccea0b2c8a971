import type { Config } from '@switchboard/core';
import type { ConnectionState } from './connection';
import { closeConnection, sendTo } from '../fanout/send';

/** How often open sockets of dialects with a keepalive are looked at. */
const SWEEP_MS = 1000;

interface Watched {
  /** When the socket opened: its activity before its first frame. */
  readonly openedAt: number;
  /** When the server's ping went out, unanswered so far. */
  pingAt: number | undefined;
}

/**
 * Server pings of the dialects that have them (`Dialect.keepalive`: Pusher's `pusher:ping` after
 * `activity_timeout` of silence, closed with 4201 when no frame follows within the pong timeout).
 * A socket's activity is its frame-rate window's start (`rateWindowStart`), which every frame
 * more than a second after the window's start moves: a ping goes out only after seconds of
 * silence, so any frame after it moves the window past it. Sockets of other dialects are never
 * added, and no timer runs while none is watched.
 */
export class Keepalive {
  private readonly watched = new Map<ConnectionState, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: { readonly config: Config }) {}

  add(state: ConnectionState): void {
    if (!state.dialect.keepalive) return;
    this.watched.set(state, { openedAt: Date.now(), pingAt: undefined });
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.timer.unref();
    }
  }

  delete(state: ConnectionState): void {
    if (!this.watched.delete(state) || this.watched.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.watched.clear();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    const now = Date.now();
    const { config } = this.ctx;
    for (const [state, watched] of this.watched) {
      const keepalive = state.dialect.keepalive;
      if (!keepalive || state.closed) continue;
      const active = Math.max(watched.openedAt, state.rateWindowStart);
      if (watched.pingAt !== undefined) {
        if (active >= watched.pingAt) watched.pingAt = undefined;
        else if (now - watched.pingAt >= keepalive.pongSeconds(config) * 1000) {
          closeConnection(state, keepalive.timeoutCode, keepalive.timeoutText);
          continue;
        } else continue;
      }
      if (now - active >= keepalive.idleSeconds(config) * 1000) {
        watched.pingAt = now;
        sendTo(this.ctx, state, keepalive.ping);
      }
    }
  }
}
