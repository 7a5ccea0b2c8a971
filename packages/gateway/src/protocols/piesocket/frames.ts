import type { JsonValue, Member } from '@switchboard/core';

/**
 * Server frames of the PieSocket dialects. V3 system events use one colon, V4 two
 * (docs/protocol.md). A V4 frame of a secondary channel carries a top-level `system::channel`.
 */

/** The terminal error frame, sent before a 4500–4999 close. */
export const errorFrame = (text: string): string => JSON.stringify({ error: text });

/** A non-terminal error: the socket stays open (a bare `{"error"}` would stop v3 SDK reconnects). */
export const v3ErrorEvent = (text: string): string =>
  JSON.stringify({ event: 'system:error', data: { error: text } });

export const BOOT_FRAME = '{"event":"system:boot"}';

export function v4Event(
  event: string,
  data: Record<string, JsonValue | Member[] | Member | undefined>,
  channel?: string,
): string {
  return JSON.stringify(
    channel === undefined ? { event, data } : { event, data, 'system::channel': channel },
  );
}

/**
 * Adds `"system::channel":"<channel>"` to a JSON object text without re-serializing it:
 * `body` must be the text of a JSON object (checked where the message entered).
 */
export function stampChannel(body: string, channel: string): string {
  const end = body.lastIndexOf('}');
  const inner = body.slice(0, end).trimEnd();
  const empty = inner.endsWith('{');
  return `${inner}${empty ? '' : ','}"system::channel":${JSON.stringify(channel)}}`;
}
