import { type PusherChannel, parseChannel } from './channels';
import { quote } from './result';

/**
 * Client frames of the Pusher protocol 7 parsed into commands (docs/pusher.md, "Frames"). A frame
 * is a JSON object `{"event", "channel"?, "data"?}`; `data` of the `pusher:` events is an object
 * (`pusher-js` sends objects; a JSON string holding the object is accepted too, as some older
 * clients send that). Anything else is refused with a message naming the problem, answered as
 * `pusher:error` with code null: the socket stays open.
 */

export type ClientCommand =
  | {
      readonly type: 'subscribe';
      readonly channel: PusherChannel;
      /** `<key>:<signature>` for private, presence and encrypted channels. */
      readonly auth?: string;
      /** The exact JSON text of a presence subscription's `channel_data`. */
      readonly channelData?: string;
    }
  | { readonly type: 'unsubscribe'; readonly channel: string }
  | { readonly type: 'ping' }
  | { readonly type: 'pong' }
  | { readonly type: 'signin'; readonly auth: string; readonly userData: string }
  | {
      readonly type: 'client-event';
      readonly event: string;
      readonly channel: PusherChannel;
      /** The JSON text of `data` as re-serialized here (safe to splice), absent when none was sent. */
      readonly dataJson?: string;
    };

export type ParsedClientFrame =
  { readonly ok: true; readonly command: ClientCommand } | { readonly ok: false; readonly message: string };

export const MAX_CLIENT_EVENT_NAME_LENGTH = 200;

const fail = (message: string): ParsedClientFrame => ({ ok: false, message });
const ok = (command: ClientCommand): ParsedClientFrame => ({ ok: true, command });

/** `data` of a `pusher:` event as an object (or a JSON string holding one). */
function dataObject(data: unknown): Record<string, unknown> | undefined {
  let value = data;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return value as Record<string, unknown>;
}

/**
 * Parses one text frame. `maxBytes` bounds the frame (the gateway's message size limit; the
 * gateway checks the byte length before decoding, this is the same bound for direct callers).
 */
export function parseClientFrame(text: string, maxBytes: number): ParsedClientFrame {
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes)
    return fail(`Frame too large: the limit is ${maxBytes} bytes`);
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return fail('Frame is not valid JSON: expected {"event": …, "data": …}');
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame))
    return fail('Frame must be a JSON object: {"event": …, "data": …}');
  const { event, channel, data } = frame as Record<string, unknown>;
  if (typeof event !== 'string' || event === '') return fail('Frame has no event name');
  switch (event) {
    case 'pusher:ping':
      return ok({ type: 'ping' });
    case 'pusher:pong':
      return ok({ type: 'pong' });
    case 'pusher:subscribe':
      return parseSubscribe(dataObject(data));
    case 'pusher:unsubscribe': {
      const body = dataObject(data);
      if (body === undefined || typeof body.channel !== 'string' || body.channel === '')
        return fail('pusher:unsubscribe needs data.channel');
      return ok({ type: 'unsubscribe', channel: body.channel });
    }
    case 'pusher:signin':
      return parseSignin(dataObject(data));
  }
  if (event.startsWith('client-')) return parseClientEvent(event, channel, data, frame as object);
  if (event.startsWith('pusher:') || event.startsWith('pusher_internal:'))
    return fail(`Unsupported event ${quote(event)}`);
  return fail(`Client events must start with 'client-': ${quote(event)}`);
}

function parseSubscribe(body: Record<string, unknown> | undefined): ParsedClientFrame {
  if (body === undefined) return fail('pusher:subscribe needs data {channel, auth?, channel_data?}');
  const channel = parseChannel(body.channel, { allowServerToUser: true });
  if (!channel.ok) return fail(channel.message);
  const { auth, channel_data: channelData } = body;
  if (auth !== undefined && auth !== null && typeof auth !== 'string') return fail('auth must be a string');
  if (channelData !== undefined && channelData !== null && typeof channelData !== 'string')
    return fail('channel_data must be the JSON string the auth endpoint returned');
  return ok({
    type: 'subscribe',
    channel: channel.value,
    // pusher-js sends auth '' for public channels: an empty auth is no auth.
    ...(typeof auth === 'string' && auth !== '' ? { auth } : {}),
    ...(typeof channelData === 'string' ? { channelData } : {}),
  });
}

function parseSignin(body: Record<string, unknown> | undefined): ParsedClientFrame {
  if (body === undefined) return fail('pusher:signin needs data {auth, user_data}');
  if (typeof body.auth !== 'string' || body.auth === '') return fail('pusher:signin needs data.auth');
  if (typeof body.user_data !== 'string' || body.user_data === '')
    return fail(
      'pusher:signin needs data.user_data (the JSON string the user authentication endpoint returned)',
    );
  return ok({ type: 'signin', auth: body.auth, userData: body.user_data });
}

function parseClientEvent(event: string, channel: unknown, data: unknown, frame: object): ParsedClientFrame {
  if (event.length > MAX_CLIENT_EVENT_NAME_LENGTH)
    return fail(`Client event name longer than ${MAX_CLIENT_EVENT_NAME_LENGTH} characters`);
  if (channel === undefined) return fail(`Client event ${quote(event)} has no channel`);
  const parsed = parseChannel(channel);
  if (!parsed.ok) return fail(parsed.message);
  return ok({
    type: 'client-event',
    event,
    channel: parsed.value,
    ...('data' in frame && data !== undefined ? { dataJson: JSON.stringify(data) } : {}),
  });
}
