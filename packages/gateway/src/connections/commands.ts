import { identityOf, isPresenceChannel } from '@switchboard/core';
import type { JsonValue, Topic } from '@switchboard/core';
import type { Answer, Command, SubscribeRequest } from '../protocols/dialect';
import { authorizeChannel, buildSubscription, identityProblem } from './admission';
import { enterChannel, leaveChannel } from './channels';
import type { ConnectionState, Subscription } from './connection';
import { relayClientMessage } from './relay';
import { signInUser } from './users';
import { sendFrameError, sendTo } from '../fanout/send';
import { HISTORY_UNAVAILABLE } from '../streams/streams';
import { isResumeProblem, parseResume } from '../streams/resume';
import type { ChannelDeps } from './channels';
import type { MemberLimit } from './presence-events';

const CLIENT_MESSAGES_OFF = 'Client messages are disabled for this API key';
const AUTH_FAILED = 'Authentication failed, provide valid jwt token.';

/**
 * Answers a command: success without `error`. `retry` marks a refusal that says nothing about
 * the request (the engine was unreachable): the client should send it again, unchanged.
 */
type Reply = (error?: string, retry?: boolean) => void;

/** Carries out what a client frame asked for (the connection's dialect read it); `primary` is the socket's primary subscription. */
export function runCommand(
  ctx: ChannelDeps,
  state: ConnectionState,
  command: Command,
  primary: Subscription | undefined,
): void {
  switch (command.type) {
    case 'publish': {
      if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
      const sub = command.channel === undefined ? primary : state.subs.get(command.channel);
      if (!sub) return; // the dialect named a channel of this socket
      if (command.limit && overLimit(state, command.limit.perSecond))
        return sendTo(ctx, state, command.limit.refusal);
      return relayClientMessage(ctx, state, sub, command.body, command.options);
    }
    case 'error':
      return sendFrameError(ctx, state, command.text, command.channel);
    case 'reply':
      return sendTo(ctx, state, command.frame);
    case 'signin':
      if (state.signedIn !== undefined)
        return sendFrameError(ctx, state, 'This connection is signed in already');
      state.signedIn = command.user;
      signInUser(ctx, state, command.user, command.watchlist ?? [], command.frame).catch((error: unknown) => {
        ctx.logger.warn({ err: error }, "a signed-in user's presence could not be written");
      });
      return;
    case 'subscribe': {
      const reply = replyWith(ctx, state, command.answer);
      subscribe(ctx, state, command.channel, command.request, reply).catch((error: unknown) => {
        ctx.logger.error({ err: error }, 'subscribe failed');
        reply('Subscribe failed; try again', true);
      });
      return;
    }
    case 'unsubscribe':
      return unsubscribe(ctx, state, command.channel, replyWith(ctx, state, command.answer));
    case 'members':
      return getMembers(ctx, state, command.channel, replyWith(ctx, state, command.answer));
  }
}

/**
 * Windows of the publishes a dialect limits per socket (`Command.limit`), kept aside so that
 * sockets which never send one carry nothing for it.
 */
const limitWindows = new WeakMap<ConnectionState, { start: number; count: number }>();

function overLimit(state: ConnectionState, perSecond: number): boolean {
  const now = Date.now();
  let window = limitWindows.get(state);
  if (!window || now - window.start >= 1000) limitWindows.set(state, (window = { start: now, count: 0 }));
  return ++window.count > perSecond;
}

const replyWith =
  (ctx: ChannelDeps, state: ConnectionState, answer: Answer): Reply =>
  (error, retry) => {
    const frame = answer(error, retry);
    if (frame !== undefined) sendTo(ctx, state, frame);
  };

async function subscribe(
  ctx: ChannelDeps,
  state: ConnectionState,
  channel: string,
  request: SubscribeRequest,
  reply: Reply,
): Promise<void> {
  if (state.subs.has(channel)) return reply();
  if (state.pending?.has(channel)) return reply('A subscribe to this channel is already in progress');
  const max = ctx.config.limits.maxChannelsPerSocket;
  if (state.subs.size + (state.pending?.size ?? 0) >= max)
    return reply(
      `Too many channels: a socket carries at most ${max} (MAX_CHANNELS_PER_SOCKET), its primary included`,
    );
  // A subscribe without `user` presents the socket's own user (from its URL or JWT).
  const queryUser = request.user === undefined ? state.subs.get(state.primary)?.user : request.user;
  const resume = parseResume(request.since, request.epoch);
  if (resume && isResumeProblem(resume)) return reply(resume.problem);
  (state.pending ??= new Set()).add(channel);
  try {
    const auth = request.authorized
      ? { ok: true as const, user: queryUser }
      : await authorizeChannel(state.record, channel, request.token, queryUser, ctx.config.jwtRequireExp);
    if (!auth.ok) return reply(AUTH_FAILED);
    const { uuid } = request;
    const tooLong = identityProblem(uuid, auth.user);
    if (tooLong) return reply(tooLong);
    const wanted = { key: state.key, protocol: state.dialect.family, channel };
    const { maxIdentities } = request;
    if (maxIdentities !== undefined) {
      // A quick refusal of a channel already full; the join itself checks again, atomically.
      const full = await isFull(ctx, wanted, maxIdentities, auth.user);
      if (full) return reply(full);
    }
    const topic = await ctx.subscriptions.acquire(wanted);
    if (state.closed) {
      ctx.subscriptions.release(topic);
      return;
    }
    const sub = buildSubscription(topic, false, {
      uuid,
      user: auth.user,
      presence: request.presence || isPresenceChannel(channel),
      recover: request.recover || resume !== undefined,
      info: request.info,
    });
    // Joins racing on other nodes may fill the channel after the check above: the presence store
    // refuses the join then, and the subscription is taken down with the same answer.
    const limit: MemberLimit | undefined =
      maxIdentities === undefined
        ? undefined
        : {
            maxIdentities,
            refused: () => {
              if (state.subs.get(channel) === sub) leaveChannel(ctx, state, sub);
              reply(fullMessage(maxIdentities));
            },
          };
    try {
      await enterChannel(ctx, state, sub, () => reply(), resume, limit);
      if (request.replayLast) await replayLast(ctx, state, sub, request.replayLast.miss);
    } catch (error) {
      ctx.logger.warn({ err: error, channel }, 'history read failed; subscribe refused');
      leaveChannel(ctx, state, sub);
      reply(HISTORY_UNAVAILABLE, true);
    }
  } finally {
    // Dropped once empty: an idle socket keeps no Set (docs/performance.md, "Idle memory per
    // connection").
    if (state.pending?.delete(channel) && state.pending.size === 0) state.pending = undefined;
  }
}

/**
 * Sends a new subscription its channel's latest publication in history, or `miss` (and stores the
 * `cache_miss` webhook event when the key's webhook takes it). A read that fails sends nothing
 * (the subscription stands; logged).
 */
async function replayLast(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  miss: string,
): Promise<void> {
  const page = await ctx.engine.history.read(sub.topic, { limit: 1 }).catch((error: unknown) => {
    ctx.logger.warn({ err: error, channel: sub.channel }, 'history read for a cache channel failed');
    return undefined;
  });
  if (!page || state.closed || state.subs.get(sub.channel) !== sub) return;
  const last = page.publications[0];
  if (last) return sendTo(ctx, state, last.body);
  sendTo(ctx, state, miss);
  if (!state.record.webhook?.events?.includes('cache_miss')) return;
  ctx.engine.webhooks
    .append(state.key, { name: 'cache_miss', channel: sub.channel })
    .catch((error: unknown) => {
      ctx.logger.warn({ err: error }, 'webhook cache_miss could not be stored');
    });
}

/** Why a presence channel at `max` identities refuses `user`, unless it is one of them. */
async function isFull(
  ctx: ChannelDeps,
  topic: Topic,
  max: number,
  user: JsonValue | undefined,
): Promise<string | undefined> {
  const page = await ctx.engine.presence.identities(topic, 0, max);
  if (page.count < max) return undefined;
  const identity = user === undefined || user === null ? undefined : identityOf({ uuid: '', user });
  if (identity !== undefined && page.identities.includes(identity)) return undefined;
  return fullMessage(max);
}

const fullMessage = (max: number): string => `The channel has reached its limit of ${max} members`;

function unsubscribe(ctx: ChannelDeps, state: ConnectionState, channel: string, reply: Reply): void {
  if (channel === state.primary)
    return reply('Cannot unsubscribe from the primary channel; close the socket instead');
  const sub = state.subs.get(channel);
  if (!sub) return reply(`Not subscribed to channel ${channel}`);
  reply();
  leaveChannel(ctx, state, sub);
}

/** The channel's identities (`ROSTER_LIMIT` most recently active) and their count. */
function getMembers(ctx: ChannelDeps, state: ConnectionState, channel: string, reply: Reply): void {
  const sub = state.subs.get(channel);
  if (!sub) return reply(`Not subscribed to channel ${channel}`);
  ctx.engine.presence.identities(sub.topic, 0, ctx.config.limits.rosterLimit).then(
    (page) => sendTo(ctx, state, state.dialect.presence.memberList(sub, page.members, page.count)),
    () => reply('Could not fetch members: the engine is unreachable'),
  );
}
