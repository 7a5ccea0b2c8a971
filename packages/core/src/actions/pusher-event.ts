import { messageText } from './channel-actions';

/**
 * A message published to a Pusher channel through the account API or the console
 * (docs/pusher.md, "Publishing from the console"): Pusher clients only act on event frames, so
 * the message goes out as one, its text as the event's `data` (a string as it is, anything else
 * its JSON text, as the server SDKs send `data`), under `event` or, when none is given,
 * `DEFAULT_PUSHER_EVENT`.
 */

/** The event name of a console or account-API publish to a Pusher channel that names none. */
export const DEFAULT_PUSHER_EVENT = 'message';

/** Event names: as the Pusher HTTP API takes them (at most 200 characters, none of the protocol's own prefixes). */
export const MAX_PUSHER_EVENT_NAME_LENGTH = 200;
const RESERVED_PREFIXES = ['pusher:', 'pusher_internal:'];

/** Why `name` cannot name a published Pusher event, or undefined when it can. */
export function pusherEventNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_PUSHER_EVENT_NAME_LENGTH)
    return `is longer than ${MAX_PUSHER_EVENT_NAME_LENGTH} characters`;
  if (RESERVED_PREFIXES.some((prefix) => name.startsWith(prefix)))
    return "must not start with 'pusher:' or 'pusher_internal:' (reserved for the protocol)";
  return undefined;
}

/** The Pusher event frame `{"event","channel","data"}` carrying `message` on `channel`. */
export function pusherEventText(channel: string, event: string, message: unknown): string {
  return JSON.stringify({ event, channel, data: messageText(message, false).text });
}
