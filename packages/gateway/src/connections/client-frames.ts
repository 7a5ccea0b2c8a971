import { runCommand } from './commands';
import { socketClock } from './connection';
import type { ConnectionState } from './connection';
import { closeConnection, sendFrameError } from '../fanout/send';
import type { ChannelDeps } from './channels';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Every client frame enters here: size limit, rate limit (docs/protocol.md, "Limits"), then the
 * connection's dialect reads it as a command, which runs here.
 */
export function handleClientFrame(
  ctx: ChannelDeps,
  state: ConnectionState,
  data: ArrayBuffer,
  isBinary: boolean,
): void {
  if (state.closed) return;
  const { maxMessageBytes, clientMessagesPerSecond } = ctx.config.limits;
  if (data.byteLength > maxMessageBytes) {
    closeConnection(
      state,
      'MESSAGE_TOO_LARGE',
      `Message too large: ${data.byteLength} bytes, the limit is ${maxMessageBytes}`,
    );
    return;
  }
  const now = socketClock();
  if (now - state.rateWindowStart >= 1000) {
    state.rateWindowStart = now;
    state.rateCount = 0;
  }
  if (++state.rateCount > clientMessagesPerSecond) {
    closeConnection(
      state,
      'RATE_LIMITED',
      `Rate limit exceeded: more than ${clientMessagesPerSecond} messages per second`,
    );
    return;
  }
  const primary = state.subs.get(state.primary);
  // A socket that lost its primary channel takes no more frames; one that never had one ('': its
  // protocol names channels in frames only) does.
  if (!primary && state.primary !== '') return;
  if (isBinary) {
    runCommand(ctx, state, state.dialect.binary(state, Buffer.from(data).toString('base64')), primary);
    return;
  }
  let text: string;
  try {
    text = utf8.decode(data);
  } catch {
    sendFrameError(ctx, state, 'Text frame is not valid UTF-8; frame dropped');
    return;
  }
  const command = state.dialect.text(state, text, ctx.config);
  if (command) runCommand(ctx, state, command, primary);
}
