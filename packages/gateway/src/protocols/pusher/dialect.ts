import { CLOSE_CODES, isReconnectable } from '@switchboard/core';
import type { CloseReason, Config, JsonValue, Member } from '@switchboard/core';
import { NODE_CONNECTION_LIMIT } from '../../connections/admission';
import type { Command, Dialect, DialectClose, SocketView, Upgrade } from '../dialect';
import { parseClientFrame } from './client-frames';
import { PUSHER_ERRORS } from './codes';
import type { PusherErrorSpec } from './codes';
import { appKeyOfPath, parseConnectQuery } from './connect';
import {
  cacheMiss,
  clientEvent,
  connectionEstablished,
  errorFrame,
  memberAdded,
  memberRemoved,
  PING_FRAME,
  PONG_FRAME,
  presenceSubscriptionSucceeded,
  signinSuccess,
  watchlistEvents,
  subscriptionCount,
  subscriptionError,
  subscriptionSucceeded,
} from './frames';
import { classifyChannel } from './channels';
import type { RosterMember } from './frames';
import { parseUserData, verifyUserAuth } from './auth';
import type { PresenceMember } from './auth';
import { handlePusherHttp } from './http-routes';
import { history } from '../../api/history';
import { clientEventProblem, authorizeSubscription } from './subscribe';

/** The channels of users' online presence (`Dialect.users`). */
const WATCHLIST_PREFIX = '#watchlist-';

/** The topic family of Pusher channels: apart from the PieSocket families' (docs/pusher.md). */
export const PUSHER_FAMILY = 'pusher';

/** What every Pusher upgrade presents besides its key: no channel, no identity, a greeting. */
const NO_CHANNEL: Omit<Upgrade, 'key'> = {
  channel: undefined,
  token: undefined,
  uuid: undefined,
  user: undefined,
  presence: false,
  recover: false,
  notifySelf: false,
  greets: true,
  since: undefined,
  epoch: undefined,
};

/**
 * The catalog's close reasons as Pusher codes (docs/pusher.md, "Errors and close codes"), so
 * `pusher-js` reconnects or stops as it does against Pusher. Reasons without a Pusher
 * counterpart take 4100 (reconnect with backoff) when the catalog lets clients reconnect, else
 * 4009 (stop).
 */
const BY_REASON: Partial<Record<CloseReason, PusherErrorSpec>> = {
  SERVER_DRAINING: PUSHER_ERRORS.RECONNECT,
  INVALID_API_KEY: PUSHER_ERRORS.APP_NOT_FOUND,
  ORIGIN_NOT_ALLOWED: PUSHER_ERRORS.ORIGIN_NOT_ALLOWED,
  CONNECTION_LIMIT: PUSHER_ERRORS.OVER_CONNECTION_QUOTA,
  UNAVAILABLE: PUSHER_ERRORS.OVER_CAPACITY,
};

function closeWith(reason: CloseReason | number, text: string): DialectClose {
  if (typeof reason === 'number') return { code: reason, frame: errorFrame(reason, text), text };
  let spec = BY_REASON[reason];
  if (reason === 'CONNECTION_LIMIT' && text === NODE_CONNECTION_LIMIT) spec = PUSHER_ERRORS.OVER_CAPACITY;
  if (spec) return { code: spec.code, frame: errorFrame(spec.code, spec.message), text: spec.message };
  // A kick (terminate_connections), a slow consumer, a frame over the limits: the catalog's text.
  const code = isReconnectable(CLOSE_CODES[reason].code)
    ? PUSHER_ERRORS.OVER_CAPACITY.code
    : PUSHER_ERRORS.ORIGIN_NOT_ALLOWED.code;
  return { code, frame: errorFrame(code, text), text };
}

/**
 * The subscribe command of an authorized channel. The subscription's uuid is the socket id (what
 * webhooks name as `socket_id`); a presence member's identity is its `user_id`, its `user_info`
 * kept aside (`Member.info`), so two sockets of one user are one member. A presence channel's
 * success is its roster (`presence.memberList`), sent once the join is answered; others get
 * `subscription_succeeded` at once.
 */
function subscribe(
  state: SocketView,
  channel: string,
  config: Config,
  cache: boolean,
  member?: PresenceMember,
): Command {
  const info = member?.userInfo as JsonValue | undefined;
  return {
    type: 'subscribe',
    channel,
    request: {
      authorized: true,
      token: undefined,
      user: member?.userId,
      uuid: state.id,
      presence: member !== undefined,
      recover: false,
      since: undefined,
      epoch: undefined,
      ...(info === undefined ? {} : { info }),
      ...(member === undefined ? {} : { maxIdentities: config.pusher.maxPresenceMembers }),
      ...(cache ? { replayLast: { miss: cacheMiss(channel) } } : {}),
    },
    answer: (error) => {
      if (error !== undefined)
        return subscriptionError(channel, { type: 'LimitReached', error, status: 400 });
      return member === undefined ? subscriptionSucceeded(channel) : undefined;
    },
  };
}

/** A stored member as Pusher's roster lists it. */
const rosterMember = (member: Member): RosterMember =>
  member.info === undefined
    ? { userId: String(member.user) }
    : { userId: String(member.user), userInfo: member.info };

const reply = (frame: string): Command => ({ type: 'reply', frame });
const CLIENT_EVENT_RATE_LIMIT = errorFrame(
  PUSHER_ERRORS.CLIENT_EVENT_RATE_LIMIT.code,
  PUSHER_ERRORS.CLIENT_EVENT_RATE_LIMIT.message,
);
const frameProblem = (message: string): Command => reply(errorFrame(null, message));

/** A client frame read as a command (docs/pusher.md, "Frames"). */
function text(state: SocketView, frame: string, config: Config): Command | undefined {
  // The connection layer checked the frame's size against MAX_MESSAGE_BYTES already.
  const parsed = parseClientFrame(frame, Number.MAX_SAFE_INTEGER);
  if (!parsed.ok) return frameProblem(parsed.message);
  const { command } = parsed;
  switch (command.type) {
    case 'ping':
      return reply(PONG_FRAME);
    case 'pong':
      return undefined;
    case 'subscribe': {
      const { channel } = command;
      const check = authorizeSubscription(
        { key: state.record.key, secret: state.record.secret },
        state.id,
        { channel, auth: command.auth, channelData: command.channelData },
        state.signedIn,
        config.pusher.identity,
      );
      if (!check.ok) return reply(subscriptionError(channel.name, check.refusal));
      return subscribe(state, channel.name, config, channel.cache, check.member);
    }
    case 'unsubscribe':
      // Pusher answers nothing, and unsubscribing from a channel one is not in is no error.
      return { type: 'unsubscribe', channel: command.channel, answer: () => undefined };
    case 'signin': {
      const app = { key: state.record.key, secret: state.record.secret };
      const verdict = verifyUserAuth(app, {
        socketId: state.id,
        auth: command.auth,
        userData: command.userData,
      });
      if (!verdict.ok) return frameProblem(`pusher:signin refused: ${verdict.message}`);
      const user = parseUserData(command.userData, config.pusher.identity);
      if (!user.ok) return frameProblem(`pusher:signin refused: ${user.message}`);
      return {
        type: 'signin',
        user: user.value.id,
        frame: signinSuccess(command.userData),
        watchlist: user.value.watchlist,
      };
    }
    case 'client-event': {
      const { channel } = command;
      const problem = clientEventProblem(channel, state.subs.has(channel.name), state.record.clientMessages);
      if (problem) return frameProblem(problem);
      // On presence channels the receivers learn who sent it.
      const user = channel.kind === 'presence' ? state.subs.get(channel.name)?.user : undefined;
      return {
        type: 'publish',
        channel: channel.name,
        body: clientEvent(
          channel.name,
          command.event,
          command.dataJson,
          user === undefined || user === null ? undefined : String(user),
        ),
        options: { stampable: false, textData: true },
        limit: { perSecond: config.pusher.clientEventsPerSecond, refusal: CLIENT_EVENT_RATE_LIMIT },
      };
    }
  }
}

/**
 * The Pusher Channels protocol 7 (docs/pusher.md): `/app/{key}?protocol=7`, no channel in the
 * URL (channels come by `pusher:subscribe`, any number per socket, each authorized by the key's
 * secret), the socket id in the greeting, Pusher's codes on every close, and Pusher's own HTTP
 * API under `/apps/`.
 */
export const pusher: Dialect = {
  family: PUSHER_FAMILY,

  upgrade(request) {
    const key = appKeyOfPath(request.path);
    if (key === undefined) return undefined;
    const query = parseConnectQuery(request.query);
    if ('refusal' in query)
      return {
        key,
        ...NO_CHANNEL,
        refused: { code: PUSHER_ERRORS.UNSUPPORTED_PROTOCOL.code, text: query.refusal },
      };
    return { key, ...NO_CHANNEL };
  },
  greeting: '',
  greet: (id, config) => connectionEstablished(id, config.pusher.activityTimeoutSeconds),
  socketIds: true,
  closeWith,
  keepalive: {
    idleSeconds: (config) => config.pusher.activityTimeoutSeconds,
    pongSeconds: (config) => config.pusher.pongTimeoutSeconds,
    ping: PING_FRAME,
    timeoutCode: PUSHER_ERRORS.PONG_NOT_RECEIVED.code,
    timeoutText: PUSHER_ERRORS.PONG_NOT_RECEIVED.message,
  },

  text,
  binary: () => ({ type: 'error', text: 'Binary frames are not part of the Pusher protocol; frame dropped' }),

  closingError: (message) => errorFrame(null, message),
  frameError: (_state, message) => errorFrame(null, message),
  // Every subscription of a Pusher socket gets the same frames: nothing is stamped.
  stamp: (body) => body,
  binaryFrames: false,

  variants: { primary: 'P' },

  // Pusher subscriptions never opt in to offsets (pusher-js cannot resume): these are not reached.
  isObject: () => false,
  offsetFrame: (publication) => publication.body,
  positionFrame: () => '{}',

  // One member per user (identity), announced to the others when its first socket joined and when
  // its last one left, cluster-wide; the joiner's roster is its subscription_succeeded.
  presence: {
    listing: 'identities',
    // The whole roster: a channel holds at most PUSHER_MAX_PRESENCE_MEMBERS users.
    listLimit: (config) => config.pusher.maxPresenceMembers,
    memberList: (sub, members) => presenceSubscriptionSucceeded(sub.channel, members.map(rosterMember)),
    joined: (sub, member, joined) =>
      joined.firstOfIdentity
        ? { body: memberAdded(sub.channel, rosterMember(member)), stampable: false, excludesSubject: true }
        : undefined,
    rejoined: () => undefined,
    leaveCarriesRoster: false,
    left: (topic, left) => {
      if (!left.lastOfIdentity) return undefined;
      const user = String(left.member.user);
      if (topic.channel.startsWith(WATCHLIST_PREFIX))
        return { body: watchlistEvents([{ name: 'offline', user_ids: [user] }]), stampable: false };
      return { body: memberRemoved(topic.channel, user), stampable: false };
    },
  },

  // A user's signed-in sockets are present in `#watchlist-<id>`, which its watchers listen to: no
  // client can name such a channel (channels.ts), so none subscribes to it otherwise.
  users: {
    channel: (user) => `${WATCHLIST_PREFIX}${user}`,
    online: (users) => watchlistEvents([{ name: 'online', user_ids: users }]),
    offline: (users) => watchlistEvents([{ name: 'offline', user_ids: users }]),
  },

  // Pusher's subscription counting, a per-app setting: the key's `subscriptionCount` (docs/pusher.md,
  // "Subscription counts"). Presence channels have member events instead, as on Pusher; a user's
  // own `#…` channels are no one else's.
  countEvents: {
    counted: (record, channel) => {
      if (record.subscriptionCount !== true || channel.startsWith('#')) return false;
      const { kind } = classifyChannel(channel);
      return kind !== 'presence' && kind !== 'server-to-user';
    },
    frame: subscriptionCount,
  },

  // A deleted key is Pusher's disabled app for the sockets it had (docs/pusher.md, "4003").
  kick: {
    targeted: false,
    revoked: { code: PUSHER_ERRORS.APP_DISABLED.code, text: PUSHER_ERRORS.APP_DISABLED.message },
  },

  // Pusher's own API is `http`; the cluster API reads its channels' history like the others'.
  routes: { '/api/pusher/history': (ctx, body) => history(ctx, PUSHER_FAMILY, body) },
  http: { prefix: '/apps/', handle: handlePusherHttp },
};
