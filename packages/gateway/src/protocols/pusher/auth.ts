import { createHmac, timingSafeEqual } from 'node:crypto';
import { USER_ID_MAX_LENGTH } from './channels';
import { type Checked, accept, quote, refuse } from './result';

/**
 * Channel authorization and user sign-in, as Pusher signs them (docs/pusher.md, "Authorization").
 *
 * A backend's auth endpoint (the `pusher` server SDKs' `authorizeChannel` / `authenticateUser`)
 * answers `auth` = `<app key>:<hex HMAC-SHA256 keyed by the app secret>` over
 * - `<socket_id>:<channel>` for a private or encrypted channel,
 * - `<socket_id>:<channel>:<channel_data>` for a presence channel (`channel_data` is the exact
 *   JSON text the endpoint returned, `{"user_id":…,"user_info":…}`),
 * - `<socket_id>::user::<user_data>` for a sign-in (`user_data` the exact JSON text, `{"id":…}`).
 * The client sends `auth` and the JSON text back unchanged; the server recomputes the HMAC over
 * the same text and compares in constant time. Only then is the JSON text parsed and bounded.
 */

export interface AppCredentials {
  readonly key: string;
  readonly secret: string;
}

/** Hex HMAC-SHA256 of `text` (UTF-8) keyed by `secret`: Pusher's signature everywhere. */
export function hmacHex(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

/**
 * Constant-time equality of two strings; strings of different lengths are unequal at once (a
 * signature's length is public: 64 hex characters).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** What is signed for a channel subscription. */
export const channelAuthString = (socketId: string, channel: string, channelData?: string): string =>
  channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;

/** What is signed for a user sign-in. */
export const userAuthString = (socketId: string, userData: string): string =>
  `${socketId}::user::${userData}`;

/** An `auth` value is `<key>:<64 hex>`; anything longer than this is refused unread. */
const AUTH_MAX_LENGTH = 512;

function verifyAuth(app: AppCredentials, auth: unknown, signed: string): Checked<void> {
  if (typeof auth !== 'string' || auth === '') return refuse('Missing auth: expected <app key>:<signature>');
  if (auth.length > AUTH_MAX_LENGTH) return refuse('Invalid auth: longer than any <app key>:<signature>');
  const colon = auth.lastIndexOf(':');
  if (colon < 0) return refuse('Invalid auth: expected <app key>:<signature>');
  const key = auth.slice(0, colon);
  if (key !== app.key) return refuse(`Invalid key in auth: ${quote(key)} is not this app's key`);
  if (!constantTimeEqual(hmacHex(app.secret, signed), auth.slice(colon + 1))) {
    // The signed text is the client's own input: naming it helps whoever debugs an auth endpoint.
    return refuse(`Invalid signature: expected the HMAC SHA256 hex digest of ${quote(signed, 256)}`);
  }
  return accept(undefined);
}

/** Checks `auth` for a subscription to a private, encrypted or (with `channelData`) presence channel. */
export function verifyChannelAuth(
  app: AppCredentials,
  request: { socketId: string; channel: string; auth: unknown; channelData?: string },
): Checked<void> {
  return verifyAuth(
    app,
    request.auth,
    channelAuthString(request.socketId, request.channel, request.channelData),
  );
}

/** Checks `auth` of a `pusher:signin`. */
export function verifyUserAuth(
  app: AppCredentials,
  request: { socketId: string; auth: unknown; userData: string },
): Checked<void> {
  return verifyAuth(app, request.auth, userAuthString(request.socketId, request.userData));
}

/** Bounds on what a backend's auth answer may make a socket carry (docs/pusher.md, "Limits"). */
export interface IdentityLimits {
  /** Bytes of `channel_data` JSON text (Pusher: member info up to 1 KB, plus the id). */
  readonly maxChannelDataBytes: number;
  /** Bytes of a presence member's `user_info` as JSON. */
  readonly maxUserInfoBytes: number;
  /** Bytes of `user_data` JSON text of a sign-in. */
  readonly maxUserDataBytes: number;
  /** User ids in a sign-in's `watchlist`. */
  readonly maxWatchlistSize: number;
}

export const DEFAULT_IDENTITY_LIMITS: IdentityLimits = {
  maxChannelDataBytes: 2048,
  maxUserInfoBytes: 1024,
  maxUserDataBytes: 16384,
  maxWatchlistSize: 100,
};

/** A presence member: `user_id` as a string (numbers are sent as strings, see `userIdOf`), and its info. */
export interface PresenceMember {
  readonly userId: string;
  /** `user_info` as sent (absent when the auth answer had none). */
  readonly userInfo?: unknown;
}

function parseJsonObject(text: unknown, field: string, maxBytes: number): Checked<Record<string, unknown>> {
  if (typeof text !== 'string') return refuse(`${field} must be a JSON string`);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return refuse(`${field} is ${bytes} bytes; the limit is ${maxBytes}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse(`${field} is not valid JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return refuse(`${field} must be a JSON object`);
  return accept(value as Record<string, unknown>);
}

/**
 * A user id as the server keeps and sends it: a non-empty string of at most 128 characters, or a
 * safe integer (Laravel's `Auth::id()` is often one), kept as its decimal string. `pusher-js`
 * keys members by id in an object, so `1` and `"1"` are one member either way.
 */
export function userIdOf(value: unknown, field: string): Checked<string> {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value)
      ? accept(String(value))
      : refuse(`${field} must be a string or an integer`);
  }
  if (typeof value !== 'string' || value === '') return refuse(`${field} is required (a non-empty string)`);
  if (value.length > USER_ID_MAX_LENGTH)
    return refuse(`${field} is ${value.length} characters; the limit is ${USER_ID_MAX_LENGTH}`);
  return accept(value);
}

/** `channel_data` of a presence subscription (after `verifyChannelAuth` accepted it). */
export function parseChannelData(
  text: unknown,
  limits: IdentityLimits = DEFAULT_IDENTITY_LIMITS,
): Checked<PresenceMember> {
  const object = parseJsonObject(text, 'channel_data', limits.maxChannelDataBytes);
  if (!object.ok) return object;
  const userId = userIdOf(object.value.user_id, 'channel_data.user_id');
  if (!userId.ok) return userId;
  if (!('user_info' in object.value) || object.value.user_info === undefined)
    return accept({ userId: userId.value });
  const info = object.value.user_info;
  const infoBytes = Buffer.byteLength(JSON.stringify(info), 'utf8');
  if (infoBytes > limits.maxUserInfoBytes)
    return refuse(`channel_data.user_info is ${infoBytes} bytes; the limit is ${limits.maxUserInfoBytes}`);
  return accept({ userId: userId.value, userInfo: info });
}

/** A signed-in user: `user_data` text kept verbatim (sent back in `pusher:signin_success`). */
export interface SignedInUser {
  readonly id: string;
  readonly watchlist: readonly string[];
  readonly userData: string;
}

/**
 * `user_data` of a sign-in (after `verifyUserAuth` accepted it). `id` must be a non-empty string:
 * `pusher-js` drops a sign-in whose id is anything else, and the server SDKs refuse to sign one.
 */
export function parseUserData(
  text: unknown,
  limits: IdentityLimits = DEFAULT_IDENTITY_LIMITS,
): Checked<SignedInUser> {
  const object = parseJsonObject(text, 'user_data', limits.maxUserDataBytes);
  if (!object.ok) return object;
  const id = object.value.id;
  if (typeof id !== 'string') return refuse('user_data.id is required (a non-empty string)');
  const checked = userIdOf(id, 'user_data.id');
  if (!checked.ok) return checked;
  const watchlist = object.value.watchlist;
  if (watchlist === undefined) return accept({ id, watchlist: [], userData: text as string });
  if (!Array.isArray(watchlist)) return refuse('user_data.watchlist must be an array of user ids');
  if (watchlist.length > limits.maxWatchlistSize)
    return refuse(
      `user_data.watchlist has ${watchlist.length} user ids; the limit is ${limits.maxWatchlistSize}`,
    );
  const ids: string[] = [];
  for (const entry of watchlist) {
    const watched = userIdOf(entry, 'user_data.watchlist entry');
    if (!watched.ok) return watched;
    if (!ids.includes(watched.value)) ids.push(watched.value);
  }
  return accept({ id, watchlist: ids, userData: text as string });
}
