import {
  AppError,
  EngineUnavailableError,
  appIdOf,
  historyRetention,
  isValidApiKey,
  announceKick,
  publishMessageThen,
} from '@switchboard/core';
import type { ApiKeyRecord, KickSelector, PublishRequest, QuotaRefusal, Topic } from '@switchboard/core';
import { takeApiRequest, takePublish } from '../../limits/rate-limit';
import type { HttpReply, HttpRequest } from '../../transport/types';
import type { DialectHttpDeps } from '../dialect';
import { channelEvent } from './frames';
import {
  batchAnswer,
  channelAnswer,
  channelsAnswer,
  eventsAnswer,
  matchRoute,
  parseBatchBody,
  parseChannelQuery,
  parseChannelsQuery,
  parseEventBody,
  parseTerminateUser,
  parseUsersChannel,
  TERMINATE_ANSWER,
  usersAnswer,
} from './http-api';
import { serverToUserChannel } from './channels';
import type { CachedEvent, ChannelCounts, HttpApiLimits, PusherRoute, TriggeredEvent } from './http-api';
import { authKeyOf, parseQuery, unknownAuthKey, verifySignedRequest } from './http-auth';
import { PUSHER_HTTP_CONTENT_TYPE_ERROR } from './http-errors';
import type { PusherHttpError } from './http-errors';

/** The family of Pusher topics (the dialect's; repeated here so this module does not import the dialect). */
const FAMILY = 'pusher';

/** The close reason of a terminated user's connections. */
const TERMINATED = "The user's connections were terminated by the app";

/** Channels read for a count or a list: the counts port pages, and a key's channels are read whole. */
const MAX_LISTED_CHANNELS = 10_000;

const ok = (value: object): HttpReply => ({ status: 200, body: JSON.stringify(value) });
/** The answer to nearly every trigger (`{}`: no `info` asked for), built once. */
const OK_EMPTY: HttpReply = Object.freeze({ status: 200, body: '{}' });
const text = (error: PusherHttpError | { status: number; body: string }): HttpReply => ({
  status: error.status,
  contentType: PUSHER_HTTP_CONTENT_TYPE_ERROR,
  body: error.body,
});
const isError = (value: unknown): value is PusherHttpError =>
  typeof value === 'object' && value !== null && 'status' in value && 'body' in value;

/** A publish over the key's quota: the daily one answers 403 (Pusher's), the per-second one 429. */
class QuotaRefused extends Error {
  constructor(readonly refusal: QuotaRefusal) {
    super(refusal.message);
  }
}

/** An error thrown on the way (a quota, the engine) as Pusher's plain-text answer. */
function thrown(ctx: DialectHttpDeps, error: unknown): HttpReply {
  if (error instanceof QuotaRefused) {
    const { refusal } = error;
    return {
      status: refusal.limit === 'messagesPerDay' ? 403 : 429,
      contentType: PUSHER_HTTP_CONTENT_TYPE_ERROR,
      headers: { 'retry-after': String(refusal.retryAfterSeconds) },
      body: refusal.message,
    };
  }
  if (error instanceof AppError)
    return {
      ...text({ status: error.status, body: error.message }),
      ...(error.retryAfterSeconds === undefined
        ? {}
        : { headers: { 'retry-after': String(error.retryAfterSeconds) } }),
    };
  if (error instanceof EngineUnavailableError)
    return text({ status: 503, body: 'Service temporarily unavailable, try again' });
  ctx.logger.error({ err: error }, 'Pusher HTTP API request failed');
  return text({ status: 500, body: 'Internal error' });
}

/**
 * The Pusher HTTP API (docs/pusher.md, "HTTP API") on the gateway port: the route, the failed-
 * authentication limit of the client's address, the app by `auth_key`, Pusher's request
 * signature (a 401 counts against the address), the key's request quota, then the route.
 * Errors are plain text with Pusher's statuses; answers are JSON.
 */
export function handlePusherHttp(ctx: DialectHttpDeps, request: HttpRequest): HttpReply | Promise<HttpReply> {
  const route = matchRoute(request.method, request.path);
  if (isError(route)) return text(route);
  const params = parseQuery(request.query);
  if (isError(params)) return text(params);
  try {
    if (ctx.authFailures.tracking) ctx.authFailures.check(request);
  } catch (error) {
    return thrown(ctx, error);
  }
  const key = authKeyOf(params);
  if (key === undefined || !isValidApiKey(key)) return refuse(ctx, request, unknownAuthKey(params));
  // A cached key is answered in this turn (as the cluster API's `authenticate` does): no promise
  // step before the request's own work.
  const cached = ctx.keys.peek(key);
  if (cached !== undefined) return authenticated(ctx, request, route, params, cached);
  return ctx.keys.get(key).then(
    (record) => authenticated(ctx, request, route, params, record),
    (error: unknown) => thrown(ctx, error),
  );
}

/** A refusal before the route ran; a 401 counts against the client's address. */
function refuse(ctx: DialectHttpDeps, request: HttpRequest, error: PusherHttpError): HttpReply {
  if (error.status === 401) ctx.authFailures.failed(request);
  return text(error);
}

/** The request of the app `record` (null: no app has its `auth_key`): its signature, quota and route. */
function authenticated(
  ctx: DialectHttpDeps,
  request: HttpRequest,
  route: PusherRoute,
  params: ReadonlyMap<string, string>,
  record: ApiKeyRecord | null,
): HttpReply | Promise<HttpReply> {
  if (!record) return refuse(ctx, request, unknownAuthKey(params));
  const problem = verifySignedRequest(
    { method: request.method, path: request.path, params, body: request.body },
    { key: record.key, secret: record.secret, appId: appIdOf(record) },
    route.appId,
  );
  if (problem) return refuse(ctx, request, problem);
  const taking = takeApiRequest(ctx, record);
  const served = taking
    ? taking.then(() => serve(ctx, record, route, params, request.body))
    : serve(ctx, record, route, params, request.body);
  return served.catch((error: unknown) => thrown(ctx, error));
}

async function serve(
  ctx: DialectHttpDeps,
  record: ApiKeyRecord,
  route: PusherRoute,
  params: ReadonlyMap<string, string>,
  body: Buffer,
): Promise<HttpReply> {
  const limits: HttpApiLimits = {
    maxBodyBytes: ctx.config.limits.maxMessageBytes,
    maxDataBytes: ctx.config.limits.maxMessageBytes,
  };
  switch (route.name) {
    case 'events': {
      const event = parseEventBody(body, limits);
      if (isError(event)) return text(event);
      await trigger(ctx, record, [event]);
      if (event.info.length === 0) return OK_EMPTY;
      return ok(eventsAnswer(event, await countsOf(ctx, record, [event])));
    }
    case 'batch_events': {
      const events = parseBatchBody(body, limits);
      if (isError(events)) return text(events);
      await trigger(ctx, record, events);
      const asking = events.filter((event) => event.info.length > 0);
      if (asking.length === 0) return OK_EMPTY;
      return ok(batchAnswer(events, await countsOf(ctx, record, asking)));
    }
    case 'channels': {
      const query = parseChannelsQuery(params);
      if (isError(query)) return text(query);
      const counts = await ctx.engine.counts.list(record.key, 0, MAX_LISTED_CHANNELS, 'pusher');
      // `#server-to-user-…` channels are a user's own, never listed (as on Pusher).
      const listed = counts.items.filter(
        (item) => item.count > 0 && item.channel.startsWith(query.prefix) && !item.channel.startsWith('#'),
      );
      const users = query.userCount
        ? await Promise.all(listed.map((item) => userCount(ctx, record, item.channel)))
        : [];
      return ok(
        channelsAnswer(
          query,
          listed.map((item, index) => ({
            name: item.channel,
            subscriptionCount: item.count,
            ...(query.userCount ? { userCount: users[index] ?? 0 } : {}),
          })),
        ),
      );
    }
    case 'channel': {
      const query = parseChannelQuery(route.channel, params);
      if (isError(query)) return text(query);
      const counts = await countsOf(ctx, record, [
        { channels: [query.channel], info: query.userCount ? ['user_count'] : [] },
      ]);
      const cached = query.cache ? await cachedEvent(ctx, record, query.channel.name) : undefined;
      return ok(channelAnswer(query, counts.get(query.channel.name), cached));
    }
    case 'channel_users': {
      const channel = parseUsersChannel(route.channel);
      if (isError(channel)) return text(channel);
      const page = await ctx.engine.presence.identities(
        topicOf(record, channel.name),
        0,
        ctx.config.pusher.maxPresenceMembers,
      );
      return ok(usersAnswer(page.identities.map(String)));
    }
    case 'terminate_user_connections': {
      const user = parseTerminateUser(route.userId);
      if (isError(user)) return text(user);
      // `channel` for nodes that do not know `signedIn`: only this user's own sockets are in it.
      const selector: KickSelector = {
        key: record.key,
        signedIn: user,
        channel: serverToUserChannel(user),
        reason: TERMINATED,
      };
      ctx.kickHere(selector);
      // Pusher answers `{}`: no count to wait for.
      await announceKick(ctx.engine, selector);
      return ok(TERMINATE_ANSWER);
    }
  }
}

const topicOf = (record: ApiKeyRecord, channel: string): Topic => ({
  key: record.key,
  protocol: FAMILY,
  channel,
});

/**
 * Publishes each event to each of its channels (each within the key's publish quota) and delivers
 * it on this node; an event's `socket_id` is left out everywhere. Each channel's frame is built
 * once. Every publish is issued in this turn, in order (no quota to wait for), so a batch's
 * publications leave for Redis together (stream-publishes.ts); resolves when all were accepted,
 * rejects with the first failure.
 */
function trigger(
  ctx: DialectHttpDeps,
  record: ApiKeyRecord,
  events: readonly TriggeredEvent[],
): Promise<unknown> {
  const publishes: Promise<void>[] = [];
  for (const event of events)
    for (const channel of event.channels) {
      const taking = takePublish(ctx, record);
      publishes.push(
        taking
          ? taking.then((refusal) => {
              if (refusal) throw new QuotaRefused(refusal);
              return publishEvent(ctx, record, event, channel.name);
            })
          : publishEvent(ctx, record, event, channel.name),
      );
    }
  return publishes.length === 1 ? publishes[0]! : Promise.all(publishes);
}

function publishEvent(
  ctx: DialectHttpDeps,
  record: ApiKeyRecord,
  event: TriggeredEvent,
  channel: string,
): Promise<void> {
  const request: { -readonly [K in keyof PublishRequest]: PublishRequest[K] } = {
    record,
    protocol: FAMILY,
    marksObjects: false,
    channel,
    message: channelEvent(channel, event.name, event.data),
    origin: ctx.nodeId,
    unconfirmed: ctx.unconfirmed.add,
  };
  if (event.socketId !== undefined) request.except = event.socketId;
  // Delivered here in the publish's own promise step (no second `then` per event).
  return publishMessageThen(ctx, request, (publication) => {
    ctx.meters.messagesIn[FAMILY]?.api.inc();
    ctx.deliverExcept(publication, event.socketId, true);
  });
}

/**
 * Subscription counts (cluster-wide) and, where asked, user counts of the events' channels: each
 * distinct channel read on its own (`ConnectionCounts.count`), so the answer is right however
 * many channels the key has, and costs what the request names, not the key's whole listing.
 */
async function countsOf(
  ctx: DialectHttpDeps,
  record: ApiKeyRecord,
  events: ReadonlyArray<Pick<TriggeredEvent, 'channels' | 'info'>>,
): Promise<Map<string, ChannelCounts>> {
  const asked = new Map<string, { wantsUsers: boolean }>();
  for (const event of events)
    for (const channel of event.channels) {
      const wantsUsers = event.info.includes('user_count') && channel.kind === 'presence';
      const seen = asked.get(channel.name);
      if (!seen) asked.set(channel.name, { wantsUsers });
      else if (wantsUsers) seen.wantsUsers = true;
    }
  const entries = await Promise.all(
    [...asked].map(async ([name, { wantsUsers }]): Promise<[string, ChannelCounts]> => {
      const [subscriptionCount, users] = await Promise.all([
        ctx.engine.counts.count(record.key, name, 'pusher'),
        wantsUsers ? userCount(ctx, record, name) : undefined,
      ]);
      return [name, { subscriptionCount, ...(users === undefined ? {} : { userCount: users }) }];
    }),
  );
  return new Map(entries);
}

/**
 * A cache channel's cached event: its latest publication in history (docs/pusher.md, "Cache
 * channels replay from history"); `ttl` is the history's time to live, an upper bound.
 */
async function cachedEvent(
  ctx: DialectHttpDeps,
  record: ApiKeyRecord,
  channel: string,
): Promise<CachedEvent | undefined> {
  const page = await ctx.engine.history.read(topicOf(record, channel), { limit: 1 });
  const last = page.publications[0];
  if (!last) return undefined;
  let frame: { event?: unknown; data?: unknown };
  try {
    frame = JSON.parse(last.body) as { event?: unknown; data?: unknown };
  } catch {
    return undefined;
  }
  if (typeof frame.event !== 'string') return undefined;
  const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data ?? null);
  return {
    event: frame.event,
    data,
    ttl: historyRetention(record, ctx.config, topicOf(record, channel)).ttlSeconds,
  };
}

const userCount = (ctx: DialectHttpDeps, record: ApiKeyRecord, channel: string): Promise<number> =>
  ctx.engine.presence.identities(topicOf(record, channel), 0, 1).then((page) => page.count);
