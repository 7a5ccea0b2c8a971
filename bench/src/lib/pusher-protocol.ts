import { createHash, createHmac } from 'node:crypto';

/**
 * The Pusher Channels protocol as the bench's load client and publisher speak it (Pusher's
 * protocol 7 and HTTP API; see docs/pusher.md): subscription addresses, the frames a subscriber
 * sends and reads, and the signed `POST /apps/{id}/events` a publisher sends. Pure functions, so
 * tests check them without a server.
 */

/** The name every benchmark publish carries. */
export const BENCH_EVENT = 'bench';

/** Splits a subscription address (`ws://…/app/{key}?protocol=7#channel`) into socket URL and channel. */
export function splitSubscription(address: string): { url: string; channel: string } {
  const hash = address.indexOf('#');
  if (hash < 0) throw new Error(`a Pusher subscription address ends with #channel: ${address}`);
  return { url: address.slice(0, hash), channel: decodeURIComponent(address.slice(hash + 1)) };
}

/** `pusher:subscribe`, with the channel authorization of a private or presence channel when given. */
export const subscribeFrame = (channel: string, auth?: ChannelAuth): string =>
  JSON.stringify({ event: 'pusher:subscribe', data: { channel, ...auth } });

export interface ChannelAuth {
  auth: string;
  channel_data?: string;
}

/** What needs an authorization: private (encrypted included) and presence channels. */
export const needsAuth = (channel: string): boolean =>
  channel.startsWith('private-') || channel.startsWith('presence-');

/**
 * A channel authorization as a backend signs it (the `pusher` SDK's `authorizeChannel`):
 * `key:HMAC-SHA256(secret, "socket_id:channel[:channel_data]")`; presence channels carry
 * `channel_data` with the member's `user_id`. The bench knows the app's secret, so its clients
 * sign for themselves instead of asking an auth endpoint.
 */
export function channelAuth(
  key: string,
  secret: string,
  socketId: string,
  channel: string,
  userId: string,
): ChannelAuth {
  const channelData = channel.startsWith('presence-') ? JSON.stringify({ user_id: userId }) : undefined;
  const signed = `${socketId}:${channel}${channelData === undefined ? '' : `:${channelData}`}`;
  const auth = `${key}:${createHmac('sha256', secret).update(signed).digest('hex')}`;
  return channelData === undefined ? { auth } : { auth, channel_data: channelData };
}
export const PING_FRAME = '{"event":"pusher:ping","data":{}}';
export const PONG_FRAME = '{"event":"pusher:pong","data":{}}';

/**
 * A benchmark delivery carries the payload of bench/src/lib/payload.ts as its `data` string, so
 * in the frame its quotes are escaped: `"data":"{\"t\":\"<16 digits>\",\"s\":\"<10 digits>\",…`.
 * Found with one `indexOf`, no JSON parse: the client's cost per delivery stays small.
 */
const T_MARKER = Buffer.from('{\\"t\\":\\"');
const T_DIGITS = 16;
/** From the first digit of `t` to the first digit of `s`: 16 digits, then `\",\"s\":\"`. */
const S_OFFSET = T_DIGITS + '\\",\\"s\\":\\"'.length;
const S_DIGITS = 10;

function digitsAt(data: Buffer, start: number, count: number): number {
  if (data.length < start + count) return -1;
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = data[i]! - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** A delivery's publish time (µs, CLOCK_MONOTONIC) and sequence number; undefined for any other frame. */
export function benchDelivery(data: Buffer): { t: number; seq: number } | undefined {
  const at = data.indexOf(T_MARKER);
  if (at < 0) return undefined;
  const start = at + T_MARKER.length;
  const t = digitsAt(data, start, T_DIGITS);
  const seq = digitsAt(data, start + S_OFFSET, S_DIGITS);
  return t < 0 || seq < 0 ? undefined : { t, seq };
}

/** What a subscriber does with a frame that is not a delivery. */
export type ControlFrame =
  | { kind: 'established'; socketId: string; activityTimeoutS: number }
  | { kind: 'subscribed'; channel: string }
  | { kind: 'ping' }
  | { kind: 'error'; code: number | null; message: string }
  | { kind: 'other'; event: string };

/** Reads a control frame (rare next to deliveries, so parsed as JSON); throws on a malformed one. */
export function controlFrame(text: string): ControlFrame {
  const frame = JSON.parse(text) as { event?: unknown; channel?: unknown; data?: unknown };
  const event = typeof frame.event === 'string' ? frame.event : '';
  // Pusher sends `data` of its own events as a JSON string; accept an object as well.
  const data = (): Record<string, unknown> => {
    if (typeof frame.data === 'string') {
      try {
        return JSON.parse(frame.data) as Record<string, unknown>;
      } catch {
        return {};
      }
    }
    return frame.data && typeof frame.data === 'object' ? (frame.data as Record<string, unknown>) : {};
  };
  switch (event) {
    case 'pusher:connection_established': {
      const d = data();
      return {
        kind: 'established',
        socketId: String(d['socket_id'] ?? ''),
        activityTimeoutS: Number(d['activity_timeout'] ?? 120) || 120,
      };
    }
    case 'pusher_internal:subscription_succeeded':
      return { kind: 'subscribed', channel: String(frame.channel ?? '') };
    case 'pusher:ping':
      return { kind: 'ping' };
    case 'pusher:error': {
      const d = data();
      return {
        kind: 'error',
        code: typeof d['code'] === 'number' ? d['code'] : null,
        message: String(d['message'] ?? ''),
      };
    }
    default:
      return { kind: 'other', event };
  }
}

/** The body of one event on one channel (`data` is a string, as Pusher's HTTP API wants). */
export const eventBody = (channel: string, data: string, name = BENCH_EVENT): string =>
  JSON.stringify({ name, channel, data });

/**
 * The body of a `batch_events` request: one event per entry, each with its own channel and data
 * (the `pusher` SDK's `triggerBatch`; at most 10 a request on Pusher, Soketi and Switchboard).
 */
export const batchBody = (events: readonly { channel: string; data: string }[], name = BENCH_EVENT): string =>
  JSON.stringify({ batch: events.map(({ channel, data }) => ({ name, channel, data })) });

/** `/apps/{id}/batch_events` beside `/apps/{id}/events`. */
export const batchPath = (eventsPath: string): string => eventsPath.replace(/\/events$/, '/batch_events');

/** Pusher's HTTP API accepts at most this many events in one `batch_events` request. */
export const PUSHER_MAX_BATCH = 10;

/**
 * The path and query of a signed Pusher HTTP API request: `auth_key`, `auth_timestamp`,
 * `auth_version=1.0`, `body_md5` (when there is a body), sorted by name, signed with HMAC-SHA256
 * of `METHOD\npath\nquery` under the app's secret (Pusher's "Authentication" documentation;
 * the `pusher` server SDK does the same).
 */
export function signedPath(
  method: string,
  path: string,
  key: string,
  secret: string,
  body: string,
  timestampS: number = Math.floor(Date.now() / 1000),
): string {
  const params: [string, string][] = [
    ['auth_key', key],
    ['auth_timestamp', String(timestampS)],
    ['auth_version', '1.0'],
  ];
  if (body.length > 0) params.push(['body_md5', createHash('md5').update(body).digest('hex')]);
  params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = params.map(([k, v]) => `${k}=${v}`).join('&');
  const signature = createHmac('sha256', secret).update(`${method}\n${path}\n${query}`).digest('hex');
  return `${path}?${query}&auth_signature=${signature}`;
}
