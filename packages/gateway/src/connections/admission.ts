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
import type { ApiKeyRecord, CloseReason, JsonValue, Topic } from '@switchboard/core';
import type { Dialect, Upgrade } from '../protocols/dialect';
import type { UpgradeRequest } from '../transport/types';
import { SocketState } from './connection';
import { flatString } from '../flat-string';
import type { ConnectionState, Rejection, SocketData, Subscription } from './connection';
import { verifyChannelToken } from './jwt';
import { isOriginAllowed } from './origin';
import { isResumeProblem, parseResume } from '../streams/resume';
import type { Resume } from '../streams/resume';
import type { NodeDeps, NodeStatus } from '../deps';
import type { BrokerSubscriptions } from '../fanout/broker-subscriptions';
import type { Registry } from '../fanout/registry';
import type { KeyCache } from '../key-cache';
import type { Dialects } from '../protocols/registry';

/** What admission takes. */
export interface AdmissionDeps extends NodeDeps {
  readonly dialects: Dialects;
  readonly keys: KeyCache;
  readonly registry: Registry;
  readonly subscriptions: BrokerSubscriptions;
  readonly status: NodeStatus;
  nextConnId(): string;
  /** The next socket id (`<node number>.<counter>`) for a dialect whose connection ids clients see. */
  nextSocketId(): string;
}

/** The text of a refusal for the node's own connection limit (a dialect may close it with a code of its own). */
export const NODE_CONNECTION_LIMIT = 'Connection limit reached for this node';

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

const reject = (
  dialect: Dialect,
  reason: CloseReason,
  text: string = CLOSE_CODES[reason].message,
): Rejection => ({
  dialect,
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
  identity: {
    uuid: string | undefined;
    user: JsonValue | undefined;
    presence: boolean;
    recover: boolean;
    info?: JsonValue | undefined;
  },
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
    info: identity.info,
    presence: identity.presence,
    recover: identity.recover,
    touchedAt: 0,
    joining: undefined,
  };
}

/**
 * Authorizes a channel for a key (docs/protocol.md, "JWT"): resolves the JWT `user` claim (which wins
 * over `queryUser`), or a rejection text when the channel is guarded and the token is missing
 * or invalid. A token presented on an unguarded channel must be valid too. `requireExp`
 * (`JWT_REQUIRE_EXP`): a token without `exp` is invalid.
 */
export async function authorizeChannel(
  record: ApiKeyRecord,
  channel: string,
  token: string | undefined,
  queryUser: JsonValue | undefined,
  requireExp: boolean,
): Promise<{ ok: true; user: JsonValue | undefined } | { ok: false }> {
  const guarded = isPrivateChannel(channel) || record.forceAuth;
  if (!token) return guarded ? { ok: false } : { ok: true, user: queryUser };
  const check = await verifyChannelToken(token, record.secret, channel, requireExp);
  if (!check.ok) return { ok: false };
  return { ok: true, user: check.user !== undefined ? check.user : queryUser };
}

/** What admission decided: at once when it needed no engine round trip, else a promise. */
export type Admission = SocketData | null | Promise<SocketData | null>;

/** The request's parts admission reads once the API key's record is known. */
interface Candidate {
  readonly request: UpgradeRequest;
  readonly dialect: Dialect;
  readonly upgrade: Upgrade;
  /** `undefined`: the connection has no primary channel (`Upgrade.channel`). */
  readonly channel: string | undefined;
  readonly key: string;
  readonly record: ApiKeyRecord;
}

/**
 * Admission, in the order of docs/protocol.md: API key, Origin, channel name, JWT (then the
 * lengths of `uuid` and the resulting `user`), resume position (`since`/`epoch`), connection limits. Returns the connection state (its primary broker
 * subscription already in place, so nothing published after the client sees `open` is missed,
 * and its socket reserved when the key's connections are limited), a rejection to deliver as
 * error frame + close, or `null` when the path is no dialect's WebSocket endpoint.
 *
 * Decided synchronously when nothing needs the engine or a wait: the key's record cached, no JWT
 * to verify, no per-key connection limit to reserve against, and the channel already subscribed
 * on this node (every connection to a busy channel after its first; when a channel's clients
 * reconnect together, most of them wait for its first `SUBSCRIBE` instead). Each step that does
 * need a wait continues as a promise, in the same order.
 */
export function admit(ctx: AdmissionDeps, request: UpgradeRequest): Admission {
  let dialect: Dialect | undefined;
  let upgrade: Upgrade | undefined;
  for (const candidate of ctx.dialects.all) {
    upgrade = candidate.upgrade(request);
    if (upgrade) {
      dialect = candidate;
      break;
    }
  }
  if (!dialect || !upgrade) return null;
  const { channel, key } = upgrade;
  if (ctx.status.draining) return reject(dialect, 'SERVER_DRAINING');
  if (upgrade.refused)
    return { ...reject(dialect, 'INVALID_CHANNEL', upgrade.refused.text), code: upgrade.refused.code };

  if (!isValidApiKey(key))
    return reject(dialect, 'INVALID_API_KEY', key ? 'Invalid API key' : 'Missing api_key');
  const cached = ctx.keys.peek(key);
  if (cached === null) return reject(dialect, 'INVALID_API_KEY');
  if (cached) return admitKnown(ctx, { request, dialect, upgrade, channel, key, record: cached });
  const found = { request, dialect, upgrade, channel, key };
  return ctx.keys.get(key).then(
    (record) => (record ? admitKnown(ctx, { ...found, record }) : reject(found.dialect, 'INVALID_API_KEY')),
    () => reject(found.dialect, 'UNAVAILABLE'),
  );
}

/** Admission once the key's record is known: Origin, channel name, JWT. */
function admitKnown(ctx: AdmissionDeps, c: Candidate): Admission {
  const { record, channel, upgrade, dialect } = c;
  if (!isOriginAllowed(c.request.headers.origin, record.domains))
    return reject(dialect, 'ORIGIN_NOT_ALLOWED');
  // A protocol whose URL names no channel: channels come by subscribe commands, authorized there.
  if (channel === undefined) return admitAuthorized(ctx, c, undefined);
  if (!isValidChannelName(channel))
    return reject(dialect, 'INVALID_CHANNEL', `Invalid channel name: use ${CHANNEL_NAME_RULE}`);

  const queryUser = upgrade.user;
  const { token } = upgrade;
  // No token: `authorizeChannel`'s answer is known without verifying anything.
  if (!token) {
    if (isPrivateChannel(channel) || record.forceAuth) return reject(dialect, 'AUTH_FAILED');
    return admitAuthorized(ctx, c, queryUser);
  }
  return authorizeChannel(record, channel, token, queryUser, ctx.config.jwtRequireExp).then((auth) =>
    auth.ok ? admitAuthorized(ctx, c, auth.user) : reject(dialect, 'AUTH_FAILED'),
  );
}

/** Admission once the channel is authorized: identity, resume position, connection limits, subscription. */
function admitAuthorized(ctx: AdmissionDeps, c: Candidate, user: JsonValue | undefined): Admission {
  const { upgrade, key, record, dialect } = c;
  const tooLong = identityProblem(upgrade.uuid, user);
  if (tooLong) return reject(dialect, 'IDENTITY_TOO_LONG', tooLong);

  const resume = parseResume(upgrade.since, upgrade.epoch);
  if (resume && isResumeProblem(resume)) return reject(dialect, 'INVALID_RESUME', resume.problem);

  const { maxConnectionsPerNode } = ctx.config.limits;
  const maxConnectionsPerKey = record.limits
    ? keyLimits(record, ctx.config).connections
    : ctx.config.limits.maxConnectionsPerKey;
  if (maxConnectionsPerNode > 0 && ctx.registry.size + ctx.status.admitting >= maxConnectionsPerNode) {
    return reject(dialect, 'CONNECTION_LIMIT', NODE_CONNECTION_LIMIT);
  }
  const wanted: Topic | undefined =
    c.channel === undefined ? undefined : { key, protocol: dialect.family, channel: c.channel };
  if (maxConnectionsPerKey <= 0) {
    if (!wanted) return connectionState(ctx, c, undefined, user, resume, false);
    const held = ctx.subscriptions.acquireHeld(wanted);
    if (held) return connectionState(ctx, c, held, user, resume, false);
  }
  return reserveAndSubscribe(ctx, c, wanted, maxConnectionsPerKey).then((admitted) =>
    'rejected' in admitted
      ? admitted
      : connectionState(ctx, c, admitted.topic, user, resume, admitted.socketReserved),
  );
}

/**
 * The waits of admission: a socket of the key's connection limit (when limited), then the broker
 * subscription. Counted in `status.admitting` meanwhile, so concurrent admissions see each other
 * before any of them is open.
 */
async function reserveAndSubscribe(
  ctx: AdmissionDeps,
  c: Candidate,
  wanted: Topic | undefined,
  maxConnectionsPerKey: number,
): Promise<Rejection | { topic: Topic | undefined; socketReserved: boolean }> {
  const { key } = c;
  ctx.status.admitting++;
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
          c.dialect,
          'CONNECTION_LIMIT',
          `Connection limit reached for this API key (limit ${maxConnectionsPerKey})`,
        );
      socketReserved = reserved === true;
    }
    if (!wanted) return { topic: undefined, socketReserved };
    try {
      return { topic: await ctx.subscriptions.acquire(wanted), socketReserved };
    } catch (error) {
      if (socketReserved) releaseKeySocket(ctx, key);
      throw error;
    }
  } finally {
    ctx.status.admitting--;
  }
}

function connectionState(
  ctx: AdmissionDeps,
  c: Candidate,
  topic: Topic | undefined,
  user: JsonValue | undefined,
  resume: Resume | undefined,
  socketReserved: boolean,
): ConnectionState {
  const { upgrade, dialect } = c;
  const subscription =
    topic &&
    buildSubscription(topic, true, {
      uuid: upgrade.uuid,
      user,
      presence: upgrade.presence || isPresenceChannel(topic.channel),
      // `since`/`epoch` alone opt in too: a client that resumes wants offsets.
      recover: upgrade.recover || resume !== undefined,
    });
  return new SocketState(
    {
      id: dialect.socketIds ? ctx.nextSocketId() : ctx.nextConnId(),
      // The record's key (or the shared topic's), not the request's copy: one string per key, not per socket.
      key: topic?.key ?? c.record.key,
      record: c.record,
      dialect,
      primary: topic?.channel ?? '',
      notifySelf: upgrade.notifySelf,
      boot: upgrade.greets,
      resume,
      pending: undefined,
      rateWindowStart: 0,
      rateCount: 0,
      conn: undefined,
      closed: false,
      socketReserved,
    },
    subscription,
  );
}

/**
 * Gives back the socket `admit` reserved for the key's connection limit, once per connection.
 * While the node drains its reservations were removed wholesale and are left alone.
 */
export function releaseSocket(ctx: AdmissionDeps, state: ConnectionState): void {
  if (!state.socketReserved) return;
  state.socketReserved = false;
  if (!ctx.status.draining) releaseKeySocket(ctx, state.key);
}

const releaseKeySocket = (ctx: AdmissionDeps, key: string): void => {
  ctx.engine.counts.releaseSocket(ctx.nodeId, key).catch((error: unknown) => {
    ctx.logger.warn({ err: error }, 'socket release failed; it is rewritten when the engine is back');
  });
};
