import type { PusherErrorSpec } from './codes';

/**
 * Server frames of the Pusher protocol 7 (docs/pusher.md, "Frames"). Every frame is a JSON object
 * `{"event", "channel"?, "data"?, "user_id"?}`. Where Pusher sends `data` as a JSON *string*
 * holding JSON (the connection, subscription, member and API-triggered events), so do these
 * builders: `pusher-js` parses a string `data` once more and the other Pusher clients rely on it.
 * Where Pusher sends an object (`pusher:error`, `pusher:ping`/`pong`, `pusher:signin_success`,
 * watchlist events, subscription errors), `data` is an object. Each builder returns the frame's
 * text, built once and sent as is to every recipient.
 */

const json = JSON.stringify;

/** The first frame of a connection. */
export function connectionEstablished(socketId: string, activityTimeoutSeconds: number): string {
  return json({
    event: 'pusher:connection_established',
    data: json({ socket_id: socketId, activity_timeout: activityTimeoutSeconds }),
  });
}

/**
 * `pusher:error`. `code` is a catalog code for connection-level errors (then the socket is
 * closed with the same code when `closes`), or null for an error about one frame (the socket
 * stays open).
 */
export function errorFrame(code: number | null, message: string): string {
  return json({ event: 'pusher:error', data: { code, message } });
}

/** `pusher:error` for a catalog entry, with an optional more precise message. */
export const catalogError = (spec: PusherErrorSpec, message: string = spec.message): string =>
  errorFrame(spec.code, message);

export const PING_FRAME = '{"event":"pusher:ping","data":{}}';
export const PONG_FRAME = '{"event":"pusher:pong","data":{}}';

/** A successful subscription to a public, private, encrypted or server-to-user channel. */
export function subscriptionSucceeded(channel: string): string {
  return json({ event: 'pusher_internal:subscription_succeeded', channel, data: '{}' });
}

/** A member of a presence channel as the roster lists it. */
export interface RosterMember {
  readonly userId: string;
  /** `user_info` from the member's `channel_data`; absent means null in the roster. */
  readonly userInfo?: unknown;
}

/**
 * A successful presence subscription: `{presence: {ids, hash, count}}`, one entry per distinct
 * user (not per socket), `hash` mapping each id to its `user_info` (null when it had none).
 */
export function presenceSubscriptionSucceeded(channel: string, members: Iterable<RosterMember>): string {
  const ids: string[] = [];
  // Keyed by user ids, which clients choose: no prototype, so '__proto__' is an id like any other.
  const hash: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const member of members) {
    if (member.userId in hash) continue;
    ids.push(member.userId);
    hash[member.userId] = member.userInfo ?? null;
  }
  return json({
    event: 'pusher_internal:subscription_succeeded',
    channel,
    data: json({ presence: { ids, hash, count: ids.length } }),
  });
}

/** A user's first socket joined a presence channel (sent once per user, to the other members). */
export function memberAdded(channel: string, member: RosterMember): string {
  const data =
    member.userInfo === undefined
      ? { user_id: member.userId }
      : { user_id: member.userId, user_info: member.userInfo };
  return json({ event: 'pusher_internal:member_added', channel, data: json(data) });
}

/** A user's last socket left a presence channel. */
export function memberRemoved(channel: string, userId: string): string {
  return json({ event: 'pusher_internal:member_removed', channel, data: json({ user_id: userId }) });
}

/** Subscriber counts, which `pusher-js` exposes as `channel.subscriptionCount`. */
export function subscriptionCount(channel: string, count: number): string {
  return json({
    event: 'pusher_internal:subscription_count',
    channel,
    data: json({ subscription_count: count }),
  });
}

/** The `type` of a subscription error, as `pusher-js` names its own (`AuthError`) and as the problem is. */
export type SubscriptionErrorType = 'AuthError' | 'InvalidChannel' | 'LimitReached';

/**
 * A refused subscription. `pusher-js` hands `data` to the channel's `pusher:subscription_error`
 * handlers (Laravel Echo's `.error()`), so it has the shape pusher-js gives its own auth errors.
 */
export function subscriptionError(
  channel: string,
  error: { readonly type: SubscriptionErrorType; readonly error: string; readonly status: number },
): string {
  return json({
    event: 'pusher:subscription_error',
    channel,
    data: { type: error.type, error: error.error, status: error.status },
  });
}

/** A cache channel had no cached event for a new subscriber. */
export function cacheMiss(channel: string): string {
  return json({ event: 'pusher:cache_miss', channel });
}

/** A sign-in succeeded: `user_data` is the exact text the client sent (pusher-js parses it). */
export function signinSuccess(userData: string): string {
  return json({ event: 'pusher:signin_success', data: { user_data: userData } });
}

export interface WatchlistEvent {
  readonly name: 'online' | 'offline';
  readonly user_ids: readonly string[];
}

/** Watched users came online or went offline (all of a user's sockets). */
export function watchlistEvents(events: readonly WatchlistEvent[]): string {
  return json({ event: 'pusher_internal:watchlist_events', data: { events } });
}

/**
 * An event triggered through the HTTP API (or sent to a user on `#server-to-user-<id>`): `data` is
 * the string the backend sent, carried as a JSON string.
 */
export function channelEvent(channel: string, event: string, data: string): string {
  return json({ event, channel, data });
}

/**
 * A relayed client event. `dataJson` is the JSON text of the `data` the sender wrote (from
 * `parseClientFrame`, already validated), spliced in unchanged; absent when the sender sent none.
 * `userId` is the sender's on presence channels.
 */
export function clientEvent(
  channel: string,
  event: string,
  dataJson: string | undefined,
  userId?: string,
): string {
  let frame = `{"event":${json(event)},"channel":${json(channel)}`;
  if (dataJson !== undefined) frame += `,"data":${dataJson}`;
  if (userId !== undefined) frame += `,"user_id":${json(userId)}`;
  return `${frame}}`;
}
