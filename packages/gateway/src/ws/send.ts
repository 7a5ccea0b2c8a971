import { CLOSE_CODES } from '@switchboard/core';
import type { CloseReason } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { ConnectionState } from './connection';
import { closeReasonText, errorFrame, v3ErrorEvent, v4Event } from './frames';

/** Sends one frame to one connection; a connection past the slow-consumer limit is closed (4008). */
export function sendTo(
  ctx: GatewayContext,
  state: ConnectionState,
  frame: string | Uint8Array,
  isBinary = false,
): void {
  const conn = state.conn;
  if (!conn || state.closed) return;
  // 1: written out; 0: buffered (check the slow-consumer limit); 2: dropped over uWS's cap.
  const sent = conn.send(frame, isBinary);
  if (sent === 1) return;
  if (sent === 2 || conn.getBufferedAmount() > ctx.config.limits.slowConsumerBytes)
    closeConnection(state, 'SLOW_CONSUMER');
}

/**
 * Closes a connection with a catalog close code. Terminal closes (4500–4999) are preceded by an
 * `{"error": text}` frame (docs/errors.md); the close frame's reason is the same text, cut to 123 bytes.
 */
export function closeConnection(
  state: ConnectionState,
  reason: CloseReason,
  text: string = CLOSE_CODES[reason].message,
): void {
  const conn = state.conn;
  if (!conn || state.closed) return;
  const { code } = CLOSE_CODES[reason];
  if (code >= 4500) conn.send(errorFrame(text));
  conn.end(code, closeReasonText(text));
}

/** Reports a problem with one frame; the socket stays open. */
export function sendFrameError(
  ctx: GatewayContext,
  state: ConnectionState,
  text: string,
  channel?: string,
): void {
  if (state.protocol === 'v3') sendTo(ctx, state, v3ErrorEvent(text));
  else if (channel === undefined || channel === state.primary)
    sendTo(ctx, state, v4Event('system::error', { error: text }));
  else sendTo(ctx, state, v4Event('system::error', { channel, error: text }, channel));
}
