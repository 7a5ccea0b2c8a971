import { z } from 'zod';
import { userIdOf } from './auth';
import { type PusherChannel, parseChannel } from './channels';
import { type PusherHttpError, badRequest, notFound, tooLarge } from './http-errors';
import { quote } from './result';
import { isSocketId } from './socket-id';

/**
 * The Pusher HTTP API's routes, request bodies and answers (docs/pusher.md, "HTTP API"), without
 * I/O: the gateway routes a request here after `verifySignedRequest` accepted it.
 */

export type PusherRoute =
  | { readonly name: 'events'; readonly appId: string }
  | { readonly name: 'batch_events'; readonly appId: string }
  | { readonly name: 'channels'; readonly appId: string }
  | { readonly name: 'channel'; readonly appId: string; readonly channel: string }
  | { readonly name: 'channel_users'; readonly appId: string; readonly channel: string }
  | { readonly name: 'terminate_user_connections'; readonly appId: string; readonly userId: string };

const ROUTE_METHODS: Record<PusherRoute['name'], 'GET' | 'POST'> = {
  events: 'POST',
  batch_events: 'POST',
  channels: 'GET',
  channel: 'GET',
  channel_users: 'GET',
  terminate_user_connections: 'POST',
};

/** Whether a path belongs to the Pusher HTTP API (everything under `/apps/`). */
export const isPusherApiPath = (path: string): boolean => path.startsWith('/apps/');

function segment(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * The route of `METHOD path` (path undecoded, without query), or the 404/405 answer. Path
 * segments are percent-decoded for use; signatures are checked against the undecoded path.
 */
export function matchRoute(method: string, path: string): PusherRoute | PusherHttpError {
  const parts = path.split('/');
  // ['', 'apps', appId, ...rest]
  const appId = parts[2] === undefined ? undefined : segment(parts[2]);
  if (parts[1] !== 'apps' || appId === undefined || appId === '')
    return notFound(`Not found: ${quote(path)}`);
  const rest = parts.slice(3);
  let route: PusherRoute | undefined;
  if (rest.length === 1 && rest[0] === 'events') route = { name: 'events', appId };
  else if (rest.length === 1 && rest[0] === 'batch_events') route = { name: 'batch_events', appId };
  else if (rest.length === 1 && rest[0] === 'channels') route = { name: 'channels', appId };
  else if (rest.length === 2 && rest[0] === 'channels') {
    const channel = segment(rest[1] ?? '');
    if (channel !== undefined && channel !== '') route = { name: 'channel', appId, channel };
  } else if (rest.length === 3 && rest[0] === 'channels' && rest[2] === 'users') {
    const channel = segment(rest[1] ?? '');
    if (channel !== undefined && channel !== '') route = { name: 'channel_users', appId, channel };
  } else if (rest.length === 3 && rest[0] === 'users' && rest[2] === 'terminate_connections') {
    const userId = segment(rest[1] ?? '');
    if (userId !== undefined && userId !== '') route = { name: 'terminate_user_connections', appId, userId };
  }
  if (route === undefined) return notFound(`Not found: ${quote(path)}`);
  const expected = ROUTE_METHODS[route.name];
  if (method.toUpperCase() !== expected) return { status: 405, body: `Method not allowed: use ${expected}` };
  return route;
}

/** Bounds of the HTTP API (docs/pusher.md, "Limits"). */
export interface HttpApiLimits {
  /** Bytes of a request body (the gateway's REST body limit). */
  readonly maxBodyBytes: number;
  /** Bytes of one event's `data` (the gateway's message size limit; Pusher's is 10 KB). */
  readonly maxDataBytes: number;
}

export const MAX_EVENT_NAME_LENGTH = 200;
export const MAX_CHANNELS_PER_EVENT = 100;
export const MAX_BATCH_SIZE = 10;
/** Characters of a trigger's `info` list. */
const MAX_INFO_LENGTH = 200;

/** `info` attributes a trigger may ask for, per channel triggered to. */
export type TriggerInfo = 'user_count' | 'subscription_count';

export interface TriggeredEvent {
  readonly name: string;
  /** The event data, a string as sent (JSON text by convention; ciphertext on encrypted channels). */
  readonly data: string;
  readonly channels: readonly PusherChannel[];
  /** The socket excluded from delivery. */
  readonly socketId?: string;
  readonly info: readonly TriggerInfo[];
}

const eventFields = {
  name: z
    .string({ required_error: 'name is required', invalid_type_error: 'name must be a string' })
    .min(1, 'name must not be empty')
    .max(MAX_EVENT_NAME_LENGTH, `name is longer than ${MAX_EVENT_NAME_LENGTH} characters`)
    .refine((name) => !name.startsWith('pusher:') && !name.startsWith('pusher_internal:'), {
      message: "name must not start with 'pusher:' or 'pusher_internal:' (reserved for the protocol)",
    }),
  data: z.string({
    required_error: 'data is required',
    invalid_type_error: 'data must be a string (the server SDKs send JSON text)',
  }),
  socket_id: z
    .string({ invalid_type_error: 'socket_id must be a string' })
    .refine(isSocketId, { message: 'socket_id must look like 123.456' })
    .optional(),
  info: z
    .string({ invalid_type_error: 'info must be a comma-separated string' })
    .max(MAX_INFO_LENGTH)
    .optional(),
};

const channelName = z.string({ invalid_type_error: 'channel names must be strings' });

export const EventBody = z
  .object({
    ...eventFields,
    channel: channelName.optional(),
    channels: z
      .array(channelName, { invalid_type_error: 'channels must be an array of channel names' })
      .min(1, 'channels must not be empty')
      .max(MAX_CHANNELS_PER_EVENT, `channels has more than ${MAX_CHANNELS_PER_EVENT} channel names`)
      .optional(),
  })
  .refine((body) => (body.channel === undefined) !== (body.channels === undefined), {
    message: 'Exactly one of channel or channels is required',
  });

export const BatchBody = z.object({
  batch: z
    .array(z.object({ ...eventFields, channel: channelName }), {
      required_error: 'batch is required',
      invalid_type_error: 'batch must be an array of events',
    })
    .min(1, 'batch must not be empty')
    .max(MAX_BATCH_SIZE, `batch has more than ${MAX_BATCH_SIZE} events`),
});

function zodProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'Invalid request body';
  // Messages name their field; a nested one (batch.3.name) is prefixed with where it sits.
  const where = issue.path.slice(0, -1).join('.');
  return where === '' ? issue.message : `${where}: ${issue.message}`;
}

function parseBody(body: Uint8Array | string, limits: HttpApiLimits): { json: unknown } | PusherHttpError {
  const bytes = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
  if (bytes > limits.maxBodyBytes)
    return tooLarge(`Request body is ${bytes} bytes; the limit is ${limits.maxBodyBytes}`);
  let text: string;
  try {
    text = typeof body === 'string' ? body : utf8.decode(body);
  } catch {
    return badRequest('Request body is not valid UTF-8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return badRequest('Request body is not valid JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return badRequest('Request body must be a JSON object');
  return { json };
}

/** Bodies must be UTF-8 (Pusher answers 400 otherwise); a replacement character would alter the data. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** No `info` attributes asked for (shared: most triggers ask for none). */
const NO_INFO: readonly string[] = Object.freeze([]);

function parseInfo(
  info: string | undefined,
  allowed: readonly string[],
): readonly string[] | PusherHttpError {
  if (info === undefined || info === '') return NO_INFO;
  const attributes = [...new Set(info.split(',').map((a) => a.trim()))];
  for (const attribute of attributes) {
    if (!allowed.includes(attribute))
      return badRequest(`Unknown info attribute ${quote(attribute)} (allowed: ${allowed.join(', ')})`);
  }
  return attributes;
}

function toEvent(
  fields: { name: string; data: string; socket_id?: string | undefined; info?: string | undefined },
  names: readonly string[],
  limits: HttpApiLimits,
): TriggeredEvent | PusherHttpError {
  const channels: PusherChannel[] = [];
  for (const name of names) {
    const channel = triggerChannel(name);
    if (!('kind' in channel)) return channel;
    if (!channels.some((c) => c.name === channel.name)) channels.push(channel);
  }
  const dataBytes = Buffer.byteLength(fields.data, 'utf8');
  if (dataBytes > limits.maxDataBytes)
    return tooLarge(`Event data is ${dataBytes} bytes; the limit is ${limits.maxDataBytes}`);
  const info = parseInfo(fields.info, TRIGGER_INFO);
  if (!isInfoList(info)) return info;
  // Plain assignments, no conditional spread: this runs for every event of every trigger.
  const event: { -readonly [K in keyof TriggeredEvent]: TriggeredEvent[K] } = {
    name: fields.name,
    data: fields.data,
    channels,
    info: info as readonly TriggerInfo[],
  };
  if (fields.socket_id !== undefined) event.socketId = fields.socket_id;
  return event;
}

const TRIGGER_INFO: readonly string[] = ['user_count', 'subscription_count'];

const TRIGGERS: { readonly allowServerToUser: boolean } = { allowServerToUser: true };
/**
 * The last channel a trigger named and its parse, reused while the name repeats: a batch's events
 * often go to one channel, and the checks and classification cost about 1,000 instructions an
 * event (docs/performance.md, "Pusher fan-out against the ceiling"). Only accepted names are kept.
 */
let lastTriggerName: string | undefined;
let lastTriggerChannel: PusherChannel | undefined;

/** A channel named by a trigger (`#server-to-user-…` allowed), or the 400 answer. */
function triggerChannel(name: string): PusherChannel | PusherHttpError {
  if (name === lastTriggerName && lastTriggerChannel !== undefined) return lastTriggerChannel;
  const channel = parseChannel(name, TRIGGERS);
  if (!channel.ok) return badRequest(channel.message);
  lastTriggerName = name;
  lastTriggerChannel = channel.value;
  return channel.value;
}
const isInfoList = (info: readonly string[] | PusherHttpError): info is readonly string[] =>
  Array.isArray(info);

/** An event's fields as the schemas accept them (`eventFields`). */
interface EventFields {
  name: string;
  data: string;
  socket_id?: string | undefined;
  info?: string | undefined;
}

/**
 * Whether `value` holds event fields `eventFields` accepts, checked without zod: the same rules,
 * written out for valid bodies, which are nearly all of them (zod's parse of a 10-event batch
 * cost about as much as the rest of the request's parsing; docs/performance.md, "What a Pusher
 * publish costs"). A body this refuses is parsed by the schema, which accepts or words the
 * refusal: the check may refuse more than the schema, never accept more.
 */
function hasEventFields(value: Record<string, unknown>): boolean {
  const { name, data, socket_id: socketId, info } = value;
  return (
    typeof name === 'string' &&
    name.length >= 1 &&
    name.length <= MAX_EVENT_NAME_LENGTH &&
    !name.startsWith('pusher:') &&
    !name.startsWith('pusher_internal:') &&
    typeof data === 'string' &&
    (socketId === undefined || isSocketId(socketId)) &&
    (info === undefined || (typeof info === 'string' && info.length <= MAX_INFO_LENGTH))
  );
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The channel names of a valid `events` body (`EventBody`), or undefined: let the schema decide. */
export function eventChannels(body: Record<string, unknown>): readonly string[] | undefined {
  if (!hasEventFields(body)) return undefined;
  const { channel, channels } = body;
  if (channels === undefined) return typeof channel === 'string' ? [channel] : undefined;
  if (channel !== undefined || !Array.isArray(channels)) return undefined;
  if (channels.length < 1 || channels.length > MAX_CHANNELS_PER_EVENT) return undefined;
  for (const name of channels as unknown[]) if (typeof name !== 'string') return undefined;
  return channels as string[];
}

/** The events of a valid `batch_events` body (`BatchBody`), or undefined: let the schema decide. */
export function batchItems(
  body: Record<string, unknown>,
): Array<EventFields & { channel: string }> | undefined {
  const { batch } = body;
  if (!Array.isArray(batch) || batch.length < 1 || batch.length > MAX_BATCH_SIZE) return undefined;
  for (const item of batch as unknown[])
    if (!isPlainObject(item) || !hasEventFields(item) || typeof item['channel'] !== 'string')
      return undefined;
  return batch as Array<EventFields & { channel: string }>;
}

/** `POST /apps/{app_id}/events`: one event to 1–100 channels. */
export function parseEventBody(
  body: Uint8Array | string,
  limits: HttpApiLimits,
): TriggeredEvent | PusherHttpError {
  const parsed = parseBody(body, limits);
  if (!('json' in parsed)) return parsed;
  const json = parsed.json as Record<string, unknown>;
  const channels = eventChannels(json);
  if (channels !== undefined) return toEvent(json as unknown as EventFields, channels, limits);
  const result = EventBody.safeParse(json);
  if (!result.success) return badRequest(zodProblem(result.error));
  const names = result.data.channels ?? [result.data.channel as string];
  return toEvent(result.data, names, limits);
}

/** `POST /apps/{app_id}/batch_events`: 1–10 events, one channel each. */
export function parseBatchBody(
  body: Uint8Array | string,
  limits: HttpApiLimits,
): TriggeredEvent[] | PusherHttpError {
  const parsed = parseBody(body, limits);
  if (!('json' in parsed)) return parsed;
  let items = batchItems(parsed.json as Record<string, unknown>);
  if (items === undefined) {
    const result = BatchBody.safeParse(parsed.json);
    if (!result.success) return badRequest(zodProblem(result.error));
    items = result.data.batch;
  }
  const events: TriggeredEvent[] = [];
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const event = toEvent(item, [item.channel], limits);
    if (!('channels' in event)) return { status: event.status, body: `batch.${index}: ${event.body}` };
    events.push(event);
  }
  return events;
}

/** Counts of one channel, as the gateway knows them cluster-wide. */
export interface ChannelCounts {
  /** Connections subscribed to the channel. */
  readonly subscriptionCount: number;
  /** Distinct users (presence channels only). */
  readonly userCount?: number;
}

/** A map keyed by channel names for an answer: no prototype, so a channel named `__proto__` is a key like any other. */
const byName = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** The answer to `POST /events` (`{}` unless `info` asked for attributes). */
export function eventsAnswer(event: TriggeredEvent, counts: ReadonlyMap<string, ChannelCounts>): object {
  if (event.info.length === 0) return {};
  const channels = byName<Record<string, number>>();
  for (const channel of event.channels)
    channels[channel.name] = infoOf(channel, event.info, counts.get(channel.name));
  return { channels };
}

/** The answer to `POST /batch_events` (`{}` unless an event asked for `info`). */
export function batchAnswer(
  events: readonly TriggeredEvent[],
  counts: ReadonlyMap<string, ChannelCounts>,
): object {
  if (events.every((event) => event.info.length === 0)) return {};
  return {
    batch: events.map((event) => {
      const channel = event.channels[0];
      return channel === undefined ? {} : infoOf(channel, event.info, counts.get(channel.name));
    }),
  };
}

/** `user_count` is reported for presence channels only (Pusher's rule); other attributes for all. */
function infoOf(
  channel: PusherChannel,
  info: readonly string[],
  counts: ChannelCounts | undefined,
): Record<string, number> {
  const out: Record<string, number> = {};
  if (info.includes('user_count') && channel.kind === 'presence') out.user_count = counts?.userCount ?? 0;
  if (info.includes('subscription_count')) out.subscription_count = counts?.subscriptionCount ?? 0;
  return out;
}

export interface ChannelsQuery {
  readonly prefix: string;
  readonly userCount: boolean;
  readonly subscriptionCount: boolean;
}

/**
 * `GET /apps/{app_id}/channels?filter_by_prefix=…&info=…`: `info=user_count` needs
 * `filter_by_prefix` to start with `presence-` (Pusher's rule: user counts exist only there).
 */
export function parseChannelsQuery(params: ReadonlyMap<string, string>): ChannelsQuery | PusherHttpError {
  const prefix = params.get('filter_by_prefix') ?? '';
  const info = parseInfo(params.get('info'), ['user_count', 'subscription_count']);
  if (!isInfoList(info)) return info;
  const userCount = info.includes('user_count');
  if (userCount && !prefix.startsWith('presence-'))
    return badRequest('info=user_count is only available with filter_by_prefix=presence-');
  return { prefix, userCount, subscriptionCount: info.includes('subscription_count') };
}

/** One occupied channel of the list, with its counts. */
export interface ListedChannel extends ChannelCounts {
  readonly name: string;
}

/** The answer to `GET /channels`: `{"channels": {"<name>": {…asked attributes}}}`. */
export function channelsAnswer(query: ChannelsQuery, channels: Iterable<ListedChannel>): object {
  const out = byName<Record<string, number>>();
  for (const channel of channels) {
    if (!channel.name.startsWith(query.prefix)) continue;
    const attributes: Record<string, number> = {};
    if (query.userCount) attributes.user_count = channel.userCount ?? 0;
    if (query.subscriptionCount) attributes.subscription_count = channel.subscriptionCount;
    out[channel.name] = attributes;
  }
  return { channels: out };
}

export interface ChannelQuery {
  readonly channel: PusherChannel;
  readonly userCount: boolean;
  readonly subscriptionCount: boolean;
  readonly cache: boolean;
}

/** `GET /apps/{app_id}/channels/{name}?info=user_count,subscription_count,cache`. */
export function parseChannelQuery(
  name: string,
  params: ReadonlyMap<string, string>,
): ChannelQuery | PusherHttpError {
  const channel = parseChannel(name);
  if (!channel.ok) return badRequest(channel.message);
  const info = parseInfo(params.get('info'), ['user_count', 'subscription_count', 'cache']);
  if (!isInfoList(info)) return info;
  const userCount = info.includes('user_count');
  if (userCount && channel.value.kind !== 'presence')
    return badRequest('info=user_count is only available for presence channels');
  const cache = info.includes('cache');
  if (cache && !channel.value.cache) return badRequest('info=cache is only available for cache channels');
  return { channel: channel.value, userCount, subscriptionCount: info.includes('subscription_count'), cache };
}

/** The last event of a cache channel, for `info=cache`. */
export interface CachedEvent {
  readonly event: string;
  readonly data: string;
  /** Seconds it stays cached. */
  readonly ttl: number;
}

/** The answer to `GET /channels/{name}`: `occupied` always, other attributes when asked. */
export function channelAnswer(
  query: ChannelQuery,
  counts: ChannelCounts | undefined,
  cached?: CachedEvent,
): object {
  const subscriptions = counts?.subscriptionCount ?? 0;
  const out: Record<string, unknown> = { occupied: subscriptions > 0 };
  if (query.userCount) out.user_count = counts?.userCount ?? 0;
  if (query.subscriptionCount) out.subscription_count = subscriptions;
  if (query.cache && cached !== undefined) out.cache = { data: cached.data, ttl: cached.ttl };
  return out;
}

/** `GET /apps/{app_id}/channels/{name}/users`: presence channels only. */
export function parseUsersChannel(name: string): PusherChannel | PusherHttpError {
  const channel = parseChannel(name);
  if (!channel.ok) return badRequest(channel.message);
  if (channel.value.kind !== 'presence')
    return badRequest('Users can only be retrieved for presence channels');
  return channel.value;
}

/** The answer to `GET /channels/{name}/users`: `{"users": [{"id": "…"}…]}`. */
export const usersAnswer = (userIds: Iterable<string>): object => ({
  users: [...userIds].map((id) => ({ id })),
});

/** `POST /apps/{app_id}/users/{id}/terminate_connections`: the user id of the path, checked. */
export function parseTerminateUser(userId: string): string | PusherHttpError {
  const checked = userIdOf(userId, 'user id');
  return checked.ok ? checked.value : badRequest(checked.message);
}

/** The answer to a successful `terminate_connections` (Pusher's: an empty object). */
export const TERMINATE_ANSWER: object = {};
