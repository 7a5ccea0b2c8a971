import type { Conn, TransportHandlers } from '../transport/types';
import { admit, releaseSocket } from './admission';
import { enterChannel, leaveChannel } from './channels';
import { handleClientFrame } from './client-frames';
import { signOutUser } from './users';
import { isRejection } from './connection';
import type { SocketData } from './connection';
import { closeConnection, closeOf, closeReasonText, sendTo } from '../fanout/send';
import { abandonEarlyJoin, joinEarly } from './presence-events';
import { HISTORY_UNAVAILABLE } from '../streams/streams';
import type { ClientAddresses, ConnectionRateLimit } from '../limits/rate-limit';
import type { AdmissionDeps } from './admission';
import type { ChannelDeps } from './channels';
import type { Keepalive } from './keepalive';

/** What the WebSocket lifecycle takes. */
export interface SocketDeps extends AdmissionDeps, ChannelDeps {
  readonly keepalive: Keepalive;
  readonly addresses: ClientAddresses;
  readonly connectionRate: ConnectionRateLimit;
}

/** Logged for a socket the transport lost right after its upgrade (`upgradeLost`). */
export const UPGRADE_LOST = 'socket closed by uWebSockets.js right after its upgrade; the client reconnects';

/** The WebSocket lifecycle: admission at upgrade, channel entry at open, cleanup at close. */
export function createSocketHandlers(
  ctx: SocketDeps,
): Omit<TransportHandlers<SocketData>, 'http' | 'bodyTooLarge'> {
  const releaseAdmitted = (data: SocketData): void => {
    if (isRejection(data)) return;
    for (const sub of data.subs.values()) ctx.subscriptions.release(sub.topic);
    releaseSocket(ctx, data);
    abandonEarlyJoin(ctx, data);
  };
  /**
   * Admitted with presence: its join starts now (`EarlyJoins`) and the upgrade goes on without
   * waiting for it. An upgrade that waits goes through `res.cork` in uWebSockets.js 20.30, which
   * can close the new socket right after its `open` (docs/architecture.md, "Upgrades that wait"):
   * admission decided at once keeps it synchronous.
   */
  const joinAdmitted = (data: SocketData | null): SocketData | null => {
    if (data && !isRejection(data)) joinEarly(ctx, data);
    return data;
  };

  return {
    upgrade: (request) => {
      const admitted = admit(ctx, request);
      return admitted instanceof Promise ? admitted.then(joinAdmitted) : joinAdmitted(admitted);
    },
    refuseUpgrade: (request) => {
      if (!ctx.connectionRate.limited) return undefined;
      const text = ctx.connectionRate.take(ctx.addresses.of(request.remoteAddress(), request.forwardedFor));
      return text === undefined ? undefined : ctx.connectionRate.refusalReply;
    },
    upgradeAborted: releaseAdmitted,
    upgradeLost: (data) => {
      const admitted = isRejection(data)
        ? {}
        : { connId: data.id, channel: data.primary, uuid: data.subs.get(data.primary)?.uuid };
      ctx.logger.warn(admitted, UPGRADE_LOST);
      releaseAdmitted(data);
    },

    open(conn: Conn, data: SocketData) {
      if (isRejection(data)) {
        const close = closeOf(data.dialect, data.code ?? data.rejected, data.text);
        if (close.frame !== undefined) conn.send(close.frame);
        conn.end(close.code, closeReasonText(close.text));
        return;
      }
      const state = data;
      state.conn = conn;
      ctx.registry.add(state);
      ctx.meters.connections[state.dialect.family]?.inc();
      if (ctx.status.draining) {
        // The drain removes this node's presence wholesale, an early join's entry with it.
        ctx.earlyJoins.abandon(state);
        closeConnection(state, 'SERVER_DRAINING');
        return;
      }
      if (state.boot)
        sendTo(ctx, state, state.dialect.greet?.(state.id, ctx.config) ?? state.dialect.greeting);
      if (state.dialect.keepalive) ctx.keepalive.add(state);
      const primary = state.subs.get(state.primary);
      if (!primary) return;
      const { resume } = state;
      state.resume = undefined;
      enterChannel(ctx, state, primary, undefined, resume)?.catch((error: unknown) => {
        ctx.logger.warn({ err: error }, 'history read failed; closing the opted-in socket');
        closeConnection(state, 'UNAVAILABLE', HISTORY_UNAVAILABLE);
      });
    },

    message(_conn, state, data, isBinary) {
      if (!isRejection(state)) handleClientFrame(ctx, state, data, isBinary);
    },

    drain() {
      // Flow control is the slow-consumer sweep's job; nothing is queued in JavaScript.
    },

    anotherOpen(except) {
      // The oldest connections come first and rarely close: the first one or two entries answer.
      for (const state of ctx.registry.all()) if (state.conn && state.conn !== except) return state.conn;
      return undefined;
    },

    close(_conn, state, code) {
      ctx.meters.closed(code);
      if (isRejection(state) || state.closed) return;
      state.closed = true;
      state.conn = undefined;
      ctx.registry.remove(state);
      ctx.meters.connections[state.dialect.family]?.dec();
      if (state.dialect.keepalive) ctx.keepalive.delete(state);
      releaseSocket(ctx, state);
      for (const sub of state.subs.values()) leaveChannel(ctx, state, sub);
      if (state.signedIn !== undefined) signOutUser(ctx, state);
    },
  };
}
