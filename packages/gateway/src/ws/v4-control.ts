import { CHANNEL_NAME_RULE, isPresenceChannel, isValidChannelName } from '@switchboard/core';
import type { JsonValue } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { authorizeChannel, buildSubscription, identityProblem } from './admission';
import { enterChannel, leaveChannel } from './channels';
import type { ConnectionState } from './connection';
import { sendChannelFrame } from './events';
import { v4Event } from './frames';
import { sendFrameError, sendTo } from './send';
import { HISTORY_UNAVAILABLE } from '../history/streams';
import { isResumeProblem, parseResume } from '../history/resume';

const AUTH_FAILED = 'Authentication failed, provide valid jwt token.';

/**
 * Answers a control frame: success without `error`. `retry` marks a refusal that says nothing
 * about the request (the engine was unreachable): the client should send it again, unchanged.
 */
type Reply = (error?: string, retry?: boolean) => void;

/** Control frames of a V4 socket (docs/protocol.md, "Control frames"); every one is answered within the SDKs' 10 s. */
export function handleV4Control(
  ctx: GatewayContext,
  state: ConnectionState,
  event: string,
  data: unknown,
): void {
  const fields =
    data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  const channel = fields['channel'];
  const name = typeof channel === 'string' ? channel : '';
  const reply =
    (kind: 'subscribe' | 'unsubscribe' | 'member_list'): Reply =>
    (error, retry) => {
      const type = error === undefined ? `system::${kind}_success` : `system::${kind}_error`;
      const data =
        error === undefined
          ? { channel: name }
          : retry
            ? { channel: name, error, retry: true }
            : { channel: name, error };
      sendTo(ctx, state, v4Event(type, data));
    };
  const problem =
    typeof channel !== 'string'
      ? 'data.channel is required (a string)'
      : !isValidChannelName(name)
        ? `Invalid channel name: use ${CHANNEL_NAME_RULE}`
        : undefined;
  switch (event) {
    case 'system::subscribe':
      if (problem) return reply('subscribe')(problem);
      subscribe(ctx, state, name, fields, reply('subscribe')).catch((error: unknown) => {
        ctx.logger.error({ err: error }, 'subscribe failed');
        reply('subscribe')('Subscribe failed; try again', true);
      });
      return;
    case 'system::unsubscribe':
      if (problem) return reply('unsubscribe')(problem);
      return unsubscribe(ctx, state, name, reply('unsubscribe'));
    case 'system::get_members':
      if (problem) return reply('member_list')(problem);
      getMembers(ctx, state, name, reply('member_list'));
      return;
    default:
      sendFrameError(
        ctx,
        state,
        `Unknown control event "${event}"; expected system::subscribe, system::unsubscribe or system::get_members`,
      );
  }
}

async function subscribe(
  ctx: GatewayContext,
  state: ConnectionState,
  channel: string,
  fields: Record<string, unknown>,
  reply: Reply,
): Promise<void> {
  if (state.subs.has(channel)) return reply();
  if (state.pending?.has(channel)) return reply('A subscribe to this channel is already in progress');
  const max = ctx.config.limits.maxChannelsPerSocket;
  if (state.subs.size + (state.pending?.size ?? 0) >= max)
    return reply(
      `Too many channels: a socket carries at most ${max} (MAX_CHANNELS_PER_SOCKET), its primary included`,
    );
  const token = typeof fields['jwt'] === 'string' ? fields['jwt'] : undefined;
  // A subscribe without `user` presents the socket's own user (from its URL or JWT).
  const queryUser =
    fields['user'] === undefined || fields['user'] === ''
      ? state.subs.get(state.primary)?.user
      : (fields['user'] as JsonValue);
  const resume = parseResume(fields['since'], fields['epoch']);
  if (resume && isResumeProblem(resume)) return reply(resume.problem);
  (state.pending ??= new Set()).add(channel);
  try {
    const auth = await authorizeChannel(state.record, channel, token, queryUser, ctx.config.jwtRequireExp);
    if (!auth.ok) return reply(AUTH_FAILED);
    const uuid = typeof fields['uuid'] === 'string' ? fields['uuid'] : undefined;
    const tooLong = identityProblem(uuid, auth.user);
    if (tooLong) return reply(tooLong);
    const topic = await ctx.subscriptions.acquire({ key: state.key, protocol: 'v4', channel });
    if (state.closed) {
      ctx.subscriptions.release(topic);
      return;
    }
    const sub = buildSubscription(topic, false, {
      uuid,
      user: auth.user,
      presence: isOn(fields['presence']) || isPresenceChannel(channel),
      recover: isOn(fields['recover']) || resume !== undefined,
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

function unsubscribe(ctx: GatewayContext, state: ConnectionState, channel: string, reply: Reply): void {
  if (channel === state.primary)
    return reply('Cannot unsubscribe from the primary channel; close the socket instead');
  const sub = state.subs.get(channel);
  if (!sub) return reply(`Not subscribed to channel ${channel}`);
  reply();
  leaveChannel(ctx, state, sub);
}

function getMembers(ctx: GatewayContext, state: ConnectionState, channel: string, reply: Reply): void {
  const sub = state.subs.get(channel);
  if (!sub) return reply(`Not subscribed to channel ${channel}`);
  ctx.engine.presence.identities(sub.topic, 0, ctx.config.limits.rosterLimit).then(
    (page) =>
      sendChannelFrame(
        ctx,
        state,
        sub,
        v4Event('system::member_list', { channel, members: page.members, count: page.count }),
      ),
    () => reply('Could not fetch members: the engine is unreachable'),
  );
}

const isOn = (value: unknown): boolean => value === true || value === 1 || value === '1' || value === 'true';
