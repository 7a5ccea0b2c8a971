import { randomUUID } from 'node:crypto';
import {
  CHANNEL_NAME_RULE,
  CLOSE_CODES,
  identityOf,
  isPresenceChannel,
  isPrivateChannel,
  isValidApiKey,
  isValidChannelName,
} from '@switchboard/core';
import { keyLimits } from '@switchboard/core';
import type { ApiKeyRecord, CloseReason, JsonValue, Protocol, Topic } from '@switchboard/core';
import type { GatewayContext } from '../context';
import type { UpgradeRequest } from '../transport/types';
import { Subscriptions } from './connection';
import { flatString } from './flat-string';
import type { ConnectionState, Rejection, SocketData, Subscription } from './connection';
import { verifyChannelToken } from './jwt';
import { isOriginAllowed } from './origin';
import { decodeLenient, isFlagOn, parseQuery } from './query';
import { isResumeProblem, parseResume } from '../history/resume';

const PATH = /^\/(v3|v4)\/([^/]*)\/?$/;

/** Bounds on what a connection presents: both go into member lists and Redis key names. */
export const MAX_UUID_CHARACTERS = 128;
export const MAX_USER_JSON_BYTES = 256;

/** Why `uuid` or `user` (the effective one, after a JWT claim) cannot be accepted, if they cannot. */
export function identityProblem(uuid: string | undefined, user: JsonValue | undefined): string | undefined {
  if (uuid !== undefined && uuid.length > MAX_UUID_CHARACTERS && [...uuid].length > MAX_UUID_CHARACTERS)
    return `uuid is longer than ${MAX_UUID_CHARACTERS} characters`;
  if (user !== undefined && Buffer.byteLength(JSON.stringify(user)) > MAX_USER_JSON_BYTES)
    return `user is longer than ${MAX_USER_JSON_BYTES} bytes of JSON`;
  return undefined;
}

const reject = (reason: CloseReason, text: string = CLOSE_CODES[reason].message): Rejection => ({
  rejected: reason,
  text,
});

/**
 * A subscription to `topic` (the shared copy `acquire` returned) and the identity it presents:
 * `uuid` (generated when absent) and `user`.
 */
export function buildSubscription(
  topic: Topic,
  primary: boolean,
  identity: { uuid: string | undefined; user: JsonValue | undefined; presence: boolean; recover: boolean },
): Subscription {
  const uuid = identity.uuid || flatString(randomUUID());
  const { user } = identity;
  return {
    channel: topic.channel,
    topic,
    primary,
    uuid,
    user: identity.user,
    userIdentity: user === undefined || user === null ? undefined : identityOf({ uuid, user }),
    presence: identity.presence,
    recover: identity.recover,
    touchedAt: 0,
  };
}

/**
 * Authorizes a channel for a key (docs/protocol.md, "JWT"): resolves the JWT `user` claim (which wins
 * over `queryUser`), or a rejection text when the channel is guarded and the token is missing
 * or invalid. A token presented on an unguarded channel must be valid too.
 */
export async function authorizeChannel(
  record: ApiKeyRecord,
  channel: string,
  token: string | undefined,
  queryUser: JsonValue | undefined,
): Promise<{ ok: true; user: JsonValue | undefined } | { ok: false }> {
  const guarded = isPrivateChannel(channel) || record.forceAuth;
  if (!token) return guarded ? { ok: false } : { ok: true, user: queryUser };
  const check = await verifyChannelToken(token, record.secret, channel);
  if (!check.ok) return { ok: false };
  return { ok: true, user: check.user !== undefined ? check.user : queryUser };
}

/**
 * Admission, in the order of docs/protocol.md: API key, Origin, channel name, JWT (then the
 * lengths of `uuid` and the resulting `user`), resume position (`since`/`epoch`), connection limits. Returns the connection state (its primary broker
 * subscription already in place, so nothing published after the client sees `open` is missed,
 * and its socket reserved when the key's connections are limited), a rejection to deliver as
 * error frame + close, or `null` when the path is not a WebSocket endpoint.
 */
export async function admit(ctx: GatewayContext, request: UpgradeRequest): Promise<SocketData | null> {
  const match = PATH.exec(request.path);
  if (!match) return null;
  const protocol = match[1] as Protocol;
  const channel = decodeLenient(match[2] ?? '');
  const query = parseQuery(request.query);
  if (ctx.status.draining) return reject('SERVER_DRAINING');

  const key = query.get('api_key') ?? '';
  if (!isValidApiKey(key)) return reject('INVALID_API_KEY', key ? 'Invalid API key' : 'Missing api_key');
  let record: ApiKeyRecord | null;
  try {
    record = await ctx.keys.get(key);
  } catch {
    return reject('UNAVAILABLE');
  }
  if (!record) return reject('INVALID_API_KEY');
  if (!isOriginAllowed(request.headers.origin, record.domains)) return reject('ORIGIN_NOT_ALLOWED');
  if (!isValidChannelName(channel))
    return reject('INVALID_CHANNEL', `Invalid channel name: use ${CHANNEL_NAME_RULE}`);

  const queryUser = query.get('user') || undefined;
  const auth = await authorizeChannel(
    record,
    channel,
    query.get('jwt') || request.headers.jwt || undefined,
    queryUser,
  );
  if (!auth.ok) return reject('AUTH_FAILED');
  const tooLong = identityProblem(query.get('uuid'), auth.user);
  if (tooLong) return reject('IDENTITY_TOO_LONG', tooLong);

  const resume = parseResume(query.get('since'), query.get('epoch'));
  if (resume && isResumeProblem(resume)) return reject('INVALID_RESUME', resume.problem);
  // `since`/`epoch` alone opt in too: a client that resumes wants offsets.
  const recover = isFlagOn(query.get('recover')) || resume !== undefined;

  const { maxConnectionsPerNode } = ctx.config.limits;
  const maxConnectionsPerKey = record.limits
    ? keyLimits(record, ctx.config).connections
    : ctx.config.limits.maxConnectionsPerKey;
  if (maxConnectionsPerNode > 0 && ctx.registry.size + ctx.status.admitting >= maxConnectionsPerNode) {
    return reject('CONNECTION_LIMIT', 'Connection limit reached for this node');
  }
  // Counted from here, so concurrent admissions see each other before any of them is open.
  ctx.status.admitting++;
  let topic: Topic;
  let socketReserved = false;
  try {
    if (maxConnectionsPerKey > 0) {
      const reserved = await ctx.engine.counts
        .reserveSocket(ctx.nodeId, key, maxConnectionsPerKey)
        .catch(() => undefined);
      // Engine unreachable: this node's own sockets are all it can count (recovery reserves them later).
      if (
        reserved === false ||
        (reserved === undefined && ctx.registry.countOfKey(key) >= maxConnectionsPerKey)
      )
        return reject(
          'CONNECTION_LIMIT',
          `Connection limit reached for this API key (limit ${maxConnectionsPerKey})`,
        );
      socketReserved = reserved === true;
    }
    try {
      topic = await ctx.subscriptions.acquire({ key, protocol, channel });
    } catch (error) {
      if (socketReserved) releaseKeySocket(ctx, key);
      throw error;
    }
  } finally {
    ctx.status.admitting--;
  }
  const subscription = buildSubscription(topic, true, {
    uuid: query.get('uuid'),
    user: auth.user,
    presence: isFlagOn(query.get('presence')) || isPresenceChannel(channel),
    recover,
  });
  const state: ConnectionState = {
    id: ctx.nextConnId(),
    key: topic.key,
    record,
    protocol,
    primary: topic.channel,
    notifySelf: isFlagOn(query.get('notify_self')),
    boot: protocol === 'v3' && query.get('be') === '1',
    resume,
    subs: new Subscriptions(subscription),
    pending: undefined,
    rateWindowStart: 0,
    rateCount: 0,
    conn: undefined,
    closed: false,
    socketReserved,
  };
  return state;
}

/**
 * Gives back the socket `admit` reserved for the key's connection limit, once per connection.
 * While the node drains its reservations were removed wholesale and are left alone.
 */
export function releaseSocket(ctx: GatewayContext, state: ConnectionState): void {
  if (!state.socketReserved) return;
  state.socketReserved = false;
  if (!ctx.status.draining) releaseKeySocket(ctx, state.key);
}

const releaseKeySocket = (ctx: GatewayContext, key: string): void => {
  ctx.engine.counts.releaseSocket(ctx.nodeId, key).catch((error: unknown) => {
    ctx.logger.warn({ err: error }, 'socket release failed; it is rewritten when the engine is back');
  });
};
