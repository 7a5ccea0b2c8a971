import { CLOSE_CODES } from '@switchboard/core';
import type { CloseReason, Config } from '@switchboard/core';
import type { ConnectionState } from '../connections/connection';

/** Sends one frame to one connection; a connection past the slow-consumer limit is closed (4008). */
export function sendTo(
  ctx: { readonly config: Config },
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
 * Closes a connection with a catalog close code. Terminal closes (4500–4999) are preceded by the
 * dialect's error frame (docs/errors.md); the close frame's reason is the same text, cut to 123 bytes.
 */
export function closeConnection(
  state: ConnectionState,
  reason: CloseReason,
  text: string = CLOSE_CODES[reason].message,
): void {
  const conn = state.conn;
  if (!conn || state.closed) return;
  const { code } = CLOSE_CODES[reason];
  if (code >= 4500) conn.send(state.dialect.closingError(text));
  conn.end(code, closeReasonText(text));
}

/** Reports a problem with one frame; the socket stays open. */
export function sendFrameError(
  ctx: { readonly config: Config },
  state: ConnectionState,
  text: string,
  channel?: string,
): void {
  sendTo(ctx, state, state.dialect.frameError(state, text, channel));
}

/** Cuts a close reason to the 123 bytes a close frame allows, on a UTF-8 character boundary. */
export function closeReasonText(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= 123) return text;
  let end = 123;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
