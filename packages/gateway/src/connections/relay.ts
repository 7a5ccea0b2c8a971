import { randomUUID } from 'node:crypto';
import { historyRetention, identityOf, isoTime } from '@switchboard/core';
import type { LogRecord } from '@switchboard/core';
import type { Dialect, RelayOptions } from '../protocols/dialect';
import type { ConnectionState, Subscription } from './connection';
import { publishToChannel } from '../fanout/events';
import { touchPresence } from './presence-events';
import { takePublish } from '../limits/rate-limit';
import { closeConnection } from '../fanout/send';
import type { ChannelDeps } from './channels';

/**
 * Relays a client message to its channel (every node; the sender only with `notify_self`),
 * appends it to the key's log and records presence activity. When the key has publish quotas the
 * message waits for them (answers come back in order, so a connection's messages keep theirs);
 * over one: an error frame naming it, then 4029, and the message is dropped.
 */
export function relayClientMessage(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  body: string,
  options: RelayOptions,
): void {
  const quota = takePublish(ctx, state.record);
  if (quota === null) return relay(ctx, state, sub, body, options);
  // A refusal can come back before earlier messages' admissions (a key refused once is refused
  // from memory); those were accepted before the close and still go out.
  void quota.then((refusal) => {
    if (!refusal) return relay(ctx, state, sub, body, options);
    if (state.closed) return;
    state.conn?.send(refusalFrame(state.dialect, refusal.message));
    closeConnection(state, 'RATE_LIMITED', refusal.message);
  });
}

/** Error frames of refusals, serialized once per dialect and text (a flooding key gets the same few). */
const refusalFrames = new Map<Dialect, Map<string, string>>();

function refusalFrame(dialect: Dialect, text: string): string {
  let frames = refusalFrames.get(dialect);
  if (!frames) refusalFrames.set(dialect, (frames = new Map()));
  let frame = frames.get(text);
  if (frame === undefined) {
    if (frames.size >= 1000) frames.clear();
    frame = dialect.closingError(text);
    frames.set(text, frame);
  }
  return frame;
}

function relay(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  body: string,
  options: RelayOptions,
): void {
  ctx.meters.messagesIn[sub.topic.protocol]?.client.inc();
  // Text messages to the whole channel join its stream; direct messages and binary frames do not.
  const streamed = options.to === undefined && !options.binary && !options.systemBinary;
  const publish: Parameters<typeof publishToChannel>[3] = { ...options, sender: state, source: 'client' };
  if (streamed) publish.stream = historyRetention(state.record, ctx.config, sub.topic);
  void publishToChannel(ctx, sub.topic, body, publish);
  const record: LogRecord = {
    id: randomUUID(),
    channel: sub.channel,
    protocol: sub.topic.protocol,
    source: 'client',
    message: body,
    ...(options.binary ? { binary: true as const } : {}),
    uuid: sub.uuid,
    ...(sub.user !== undefined ? { user: sub.user } : {}),
    timestamp: isoTime(Date.now()),
  };
  ctx.engine.logs.append(state.key, record).catch((error: unknown) => {
    ctx.logger.warn({ err: error }, 'message log append failed');
  });
  if (!state.closed) touchPresence(ctx, state, sub);
  if (options.to === undefined && !options.binary && state.record.webhook?.events?.includes('client_event')) {
    emitClientEvent(ctx, state, sub, body, options.textData === true);
  }
}

/** A `client_event` webhook event for a relayed JSON message with a string `event`; others are not events. */
function emitClientEvent(
  ctx: ChannelDeps,
  state: ConnectionState,
  sub: Subscription,
  body: string,
  textData: boolean,
): void {
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return;
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return;
  const { event } = message as { event?: unknown };
  let { data } = message as { data?: unknown };
  if (typeof event !== 'string') return;
  if (textData && data !== undefined && typeof data !== 'string') data = JSON.stringify(data);
  ctx.engine.webhooks
    .append(state.key, {
      name: 'client_event',
      channel: sub.channel,
      event,
      ...(data !== undefined ? { data } : {}),
      socket_id: sub.uuid,
      ...(sub.user !== undefined ? { user_id: identityOf({ uuid: sub.uuid, user: sub.user }) } : {}),
    })
    .catch((error: unknown) => {
      ctx.logger.warn({ err: error }, 'webhook client_event could not be stored');
    });
}
