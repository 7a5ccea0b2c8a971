import type { GatewayContext } from '../context';
import type { ConnectionState, Subscription } from './connection';
import { relayClientMessage } from './relay';
import { closeConnection, sendFrameError } from './send';
import { handleV4Control } from './v4-control';

const CLIENT_MESSAGES_OFF = 'Client messages are disabled for this API key';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Every client frame enters here: size limit, rate limit, then the protocol's rules (docs/protocol.md, "Limits"). */
export function handleClientFrame(
  ctx: GatewayContext,
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
  const now = Date.now();
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
  if (!primary) return;
  if (isBinary) {
    handleBinary(ctx, state, primary, data);
    return;
  }
  let text: string;
  try {
    text = utf8.decode(data);
  } catch {
    sendFrameError(ctx, state, 'Text frame is not valid UTF-8; frame dropped');
    return;
  }
  if (text === 'cmd_ping') return;
  if (state.protocol === 'v3') handleV3Text(ctx, state, primary, text);
  else handleV4Text(ctx, state, primary, text);
}

function handleBinary(
  ctx: GatewayContext,
  state: ConnectionState,
  primary: Subscription,
  data: ArrayBuffer,
): void {
  if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
  const base64 = Buffer.from(data).toString('base64');
  if (state.protocol === 'v3')
    relayClientMessage(ctx, state, primary, base64, { stampable: false, binary: true });
  else
    relayClientMessage(ctx, state, primary, JSON.stringify({ event: 'system::binary', data: base64 }), {
      stampable: true,
      systemBinary: true,
    });
}

/** V3: frames are relayed verbatim (JSON or raw text); V3 has no control events. */
function handleV3Text(
  ctx: GatewayContext,
  state: ConnectionState,
  primary: Subscription,
  text: string,
): void {
  if (text.includes('"system::')) {
    const event = controlEventOf(text);
    if (event)
      return sendFrameError(ctx, state, `Unknown event "${event}": V3 connections take no control events`);
  }
  if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
  relayClientMessage(ctx, state, primary, text, { stampable: false });
}

/**
 * V4: control events (`system::…`) are answered; other JSON objects are routed by
 * `system::channel` (default: the primary) and may be direct messages (`system::to`); anything
 * else belongs to the primary and is relayed verbatim.
 */
function handleV4Text(
  ctx: GatewayContext,
  state: ConnectionState,
  primary: Subscription,
  text: string,
): void {
  const frame = parseObject(text);
  if (!frame) {
    if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
    return relayClientMessage(ctx, state, primary, text, { stampable: false });
  }
  const event = frame['event'];
  if (typeof event === 'string' && event.startsWith('system::'))
    return handleV4Control(ctx, state, event, frame['data']);

  const tag = frame['system::channel'];
  let sub = primary;
  let body = text;
  if (tag !== undefined) {
    const tagged = typeof tag === 'string' ? state.subs.get(tag) : undefined;
    if (!tagged) return sendFrameError(ctx, state, `Not subscribed to channel ${JSON.stringify(tag)}`);
    sub = tagged;
    // The canonical form has no tag: each recipient's variant is stamped (or not) at delivery.
    delete frame['system::channel'];
    body = JSON.stringify(frame);
  }
  const to = frame['system::to'];
  if (to !== undefined && typeof to !== 'string') {
    return sendFrameError(
      ctx,
      state,
      'system::to must be a string (the target user)',
      sub.primary ? undefined : sub.channel,
    );
  }
  if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
  relayClientMessage(ctx, state, sub, body, to === undefined ? { stampable: true } : { stampable: true, to });
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (text.charCodeAt(0) !== 123 /* { */) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function controlEventOf(text: string): string | undefined {
  const event = parseObject(text)?.['event'];
  return typeof event === 'string' && event.startsWith('system::') ? event : undefined;
}
