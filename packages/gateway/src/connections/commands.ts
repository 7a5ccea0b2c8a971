import { isPresenceChannel } from '@switchboard/core';
import type { Answer, Command, SubscribeRequest } from '../protocols/dialect';
import { authorizeChannel, buildSubscription, identityProblem } from './admission';
import { enterChannel, leaveChannel } from './channels';
import type { ConnectionState, Subscription } from './connection';
import { relayClientMessage } from './relay';
import { sendFrameError, sendTo } from '../fanout/send';
import { HISTORY_UNAVAILABLE } from '../streams/streams';
import { isResumeProblem, parseResume } from '../streams/resume';
import type { ChannelDeps } from './channels';

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
  primary: Subscription,
): void {
  switch (command.type) {
    case 'publish': {
      if (!state.record.clientMessages) return sendFrameError(ctx, state, CLIENT_MESSAGES_OFF);
      const sub = command.channel === undefined ? primary : state.subs.get(command.channel);
      if (!sub) return; // the dialect named a channel of this socket
      return relayClientMessage(ctx, state, sub, command.body, command.options);
    }
    case 'error':
      return sendFrameError(ctx, state, command.text, command.channel);
    case 'reply':
      return sendTo(ctx, state, command.frame);
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

const replyWith =
  (ctx: ChannelDeps, state: ConnectionState, answer: Answer): Reply =>
  (error, retry) =>
    sendTo(ctx, state, answer(error, retry));

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
    const auth = await authorizeChannel(
      state.record,
      channel,
      request.token,
      queryUser,
      ctx.config.jwtRequireExp,
    );
    if (!auth.ok) return reply(AUTH_FAILED);
    const { uuid } = request;
    const tooLong = identityProblem(uuid, auth.user);
    if (tooLong) return reply(tooLong);
    const topic = await ctx.subscriptions.acquire({
      key: state.key,
      protocol: state.dialect.family,
      channel,
    });
    if (state.closed) {
      ctx.subscriptions.release(topic);
      return;
    }
    const sub = buildSubscription(topic, false, {
      uuid,
      user: auth.user,
      presence: request.presence || isPresenceChannel(channel),
      recover: request.recover || resume !== undefined,
    });
    try {
      await enterChannel(ctx, state, sub, () => reply(), resume);
    } catch (error) {
      ctx.logger.warn({ err: error, channel }, 'history read failed; subscribe refused');
      leaveChannel(ctx, state, sub);
      reply(HISTORY_UNAVAILABLE, true);
    }
  } finally {
    state.pending?.delete(channel);
  }
}

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
