import { type Checked, accept, quote, refuse } from './result';

/**
 * Pusher channel names and kinds (docs/pusher.md, "Channels").
 *
 * A name is 1 to 164 characters of `A-Z a-z 0-9 _ - = @ , . ;` (Pusher's documented rule). Its
 * prefix gives its kind: `private-encrypted-` (end-to-end encrypted, the server relays ciphertext),
 * `private-`, `presence-`, or public; `cache-` after the kind's prefix (or alone, for public
 * channels) makes it a cache channel, which replays its last event to a new subscriber.
 * `#server-to-user-<user id>` is the channel a signed-in socket receives server-to-user events
 * on: it is outside the naming rule (it is never a name a client picks) and only the socket
 * signed in as that user may subscribe to it.
 */

export const CHANNEL_NAME_MAX_LENGTH = 164;
const CHANNEL_NAME = /^[A-Za-z0-9_\-=@,.;]+$/;
export const CHANNEL_NAME_RULE = `1 to ${CHANNEL_NAME_MAX_LENGTH} characters of A-Z a-z 0-9 _ - = @ , . ;`;

export const SERVER_TO_USER_PREFIX = '#server-to-user-';

export type PusherChannelKind = 'public' | 'private' | 'presence' | 'encrypted' | 'server-to-user';

export interface PusherChannel {
  readonly name: string;
  readonly kind: PusherChannelKind;
  /** A cache channel: the last event is replayed to new subscribers, or `pusher:cache_miss` sent. */
  readonly cache: boolean;
  /** A subscription needs `auth` (private, presence and encrypted channels). */
  readonly needsAuth: boolean;
  /** Subscribers may send `client-*` events (private and presence channels; never encrypted ones). */
  readonly clientEvents: boolean;
  /** For `#server-to-user-<id>`: the user id; otherwise undefined. */
  readonly userId?: string;
}

/** Prefixes from the most specific: the first that matches decides. */
const PREFIXES: ReadonlyArray<readonly [string, PusherChannelKind, boolean]> = [
  ['private-encrypted-cache-', 'encrypted', true],
  ['private-encrypted-', 'encrypted', false],
  ['private-cache-', 'private', true],
  ['private-', 'private', false],
  ['presence-cache-', 'presence', true],
  ['presence-', 'presence', false],
  ['cache-', 'public', true],
];

/** Why `name` is not a channel a client may name, or undefined when it is valid. Texts as Pusher's SDKs word them. */
export function channelNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return `Invalid channel name: ${quote(name)}`;
  if (name.length > CHANNEL_NAME_MAX_LENGTH)
    return `Channel name too long: ${quote(name)} (at most ${CHANNEL_NAME_MAX_LENGTH} characters)`;
  if (!CHANNEL_NAME.test(name))
    return `Invalid channel name: ${quote(name)} (names are ${CHANNEL_NAME_RULE})`;
  return undefined;
}

export function isValidChannelName(name: unknown): name is string {
  return channelNameProblem(name) === undefined;
}

/** The kind of a valid channel name (call after `channelNameProblem`, or use `parseChannel`). */
export function classifyChannel(name: string): PusherChannel {
  if (name.startsWith(SERVER_TO_USER_PREFIX)) {
    return {
      name,
      kind: 'server-to-user',
      cache: false,
      needsAuth: false,
      clientEvents: false,
      userId: name.slice(SERVER_TO_USER_PREFIX.length),
    };
  }
  for (const [prefix, kind, cache] of PREFIXES) {
    if (name.startsWith(prefix)) return describe(name, kind, cache);
  }
  return describe(name, 'public', false);
}

function describe(name: string, kind: PusherChannelKind, cache: boolean): PusherChannel {
  return {
    name,
    kind,
    cache,
    needsAuth: kind !== 'public',
    clientEvents: kind === 'private' || kind === 'presence',
  };
}

/** The maximum length of a user id (presence `user_id`, sign-in `id`, `#server-to-user-` suffix). */
export const USER_ID_MAX_LENGTH = 128;

/**
 * A channel named by a client (`pusher:subscribe`, client events) or by the HTTP API. A
 * `#server-to-user-<id>` name is accepted when `allowServerToUser` (a subscribe, whose caller then
 * checks the socket is signed in as `<id>`; an HTTP API trigger, which is how `sendToUser` sends).
 */
export function parseChannel(
  name: unknown,
  options: { allowServerToUser?: boolean } = {},
): Checked<PusherChannel> {
  if (options.allowServerToUser && typeof name === 'string' && name.startsWith(SERVER_TO_USER_PREFIX)) {
    const userId = name.slice(SERVER_TO_USER_PREFIX.length);
    if (userId === '' || userId.length > USER_ID_MAX_LENGTH)
      return refuse(
        `Invalid channel name: ${quote(name)} (the user id is 1 to ${USER_ID_MAX_LENGTH} characters)`,
      );
    return accept(classifyChannel(name));
  }
  const problem = channelNameProblem(name);
  return problem === undefined ? accept(classifyChannel(name as string)) : refuse(problem);
}

/** The server-to-user channel of a signed-in user. */
export const serverToUserChannel = (userId: string): string => `${SERVER_TO_USER_PREFIX}${userId}`;
