import { z } from 'zod';
import {
  CHANNEL_NAME_RULE,
  CLOSE_CODES,
  isValidChannelName,
  kickConnections,
  publishAnswer,
  publishMessage,
  quotaError,
  readHistory,
  takePublishQuota,
  AppError,
  DEFAULT_FAMILY,
  DEFAULT_PUSHER_EVENT,
  IDENTITY_FAMILIES,
  TOPIC_FAMILIES,
  pusherEventNameProblem,
  pusherEventText,
} from '@switchboard/core';
import type { HistoryAnswer, KickSelector } from '@switchboard/core';
import { positiveIntegerParam, querySchema } from '../http/query';
import { defineEndpoint, definePostEndpoint } from './endpoint';

/** Most publications one history read returns, as on the cluster API. */
export const HISTORY_LIMIT = 100;

export const channelName = z.string().refine(isValidChannelName, { message: `must be ${CHANNEL_NAME_RULE}` });
export const protocolParam = z.enum(TOPIC_FAMILIES as [string, ...string[]], {
  message: `must be ${TOPIC_FAMILIES.map((family) => JSON.stringify(family)).join(' or ')}`,
});

/**
 * `GET /api/history?channel=&protocol=&limit=`: the channel's stream position and its latest
 * stored publications (at most `limit`, capped to 100), ascending by offset; the same read as
 * `POST /api/v4/history` on the cluster API. `protocol` defaults to `v4`.
 */
export const historyEndpoint = defineEndpoint({
  path: '/history',
  query: querySchema({
    channel: z.string({ message: 'channel is required (a channel name)' }).pipe(channelName),
    protocol: protocolParam.optional(),
    limit: positiveIntegerParam('limit'),
  }),
  handle: (key, query, context): Promise<HistoryAnswer> =>
    readHistory(
      context,
      key,
      { key: key.key, protocol: query.protocol ?? DEFAULT_FAMILY, channel: query.channel },
      {
        limit: Math.min(query.limit ?? HISTORY_LIMIT, HISTORY_LIMIT),
      },
    ),
});

/**
 * `POST /api/messages` `{"channel", "protocol"?, "message", "event"?}`: publishes to the channel's
 * V4 (the default), V3 or Pusher connections on every node; to Pusher connections as the Pusher
 * event `event` (default `DEFAULT_PUSHER_EVENT`) whose `data` is the message's text, through the same core path as `POST /api/v4/publish`
 * (docs/console.md, "How publish and kick reach the product"), counted against the key's
 * `publishesPerSecond` and `messagesPerDay` like every other publication.
 */
export const publishEndpoint = definePostEndpoint({
  path: '/messages',
  body: z
    .object({
      channel: channelName,
      protocol: protocolParam.optional(),
      message: z.unknown(),
      event: z
        .string()
        .superRefine((name, ctx) => {
          const problem = pusherEventNameProblem(name);
          if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
        })
        .optional(),
    })
    .strict(),
  handle: async (key, body, context): Promise<object> => {
    const protocol = body.protocol ?? DEFAULT_FAMILY;
    if (body.event !== undefined && protocol !== 'pusher')
      throw new AppError(
        'SB_INVALID_FIELD',
        'Invalid field "event": only a publish with protocol "pusher" names an event',
      );
    // A Pusher client acts on event frames only: the message goes out as one (docs/pusher.md).
    const message =
      protocol === 'pusher'
        ? pusherEventText(body.channel, body.event ?? DEFAULT_PUSHER_EVENT, body.message ?? null)
        : body.message;
    // The key's publication quotas count console publishes too (429 with `Retry-After`).
    const refusal = await takePublishQuota(context.engine.quotas, context.config, key);
    if (refusal) throw quotaError(refusal);
    return publishAnswer(
      await publishMessage(context, {
        record: key,
        protocol,
        marksObjects: IDENTITY_FAMILIES.has(protocol),
        channel: body.channel,
        message,
        origin: context.origin,
      }),
    );
  },
});

/**
 * `POST /api/kicks` `{"channel"?, "uuid"?, "user"?, "reason"?}`: closes (code 4509) the key's
 * connections matching every given selector, on every node, V3 and V4 alike, as
 * `POST /api/v4/kick` does. At least one selector is required: kicking every connection of the
 * key stays a deliberate `POST /api/kick` on the cluster API.
 */
export const kickEndpoint = definePostEndpoint({
  path: '/kicks',
  body: z
    .object({
      channel: channelName.optional(),
      uuid: z.string().min(1).max(256).optional(),
      user: z.string().min(1).max(1024).optional(),
      reason: z.string().max(1024).optional(),
    })
    .strict()
    .refine((body) => body.channel !== undefined || body.uuid !== undefined || body.user !== undefined, {
      message: 'Give at least one of channel, uuid and user (the connections to kick)',
    }),
  handle: async (key, body, { engine }): Promise<object> => {
    const selector: KickSelector = {
      key: key.key,
      reason: body.reason ?? CLOSE_CODES.KICKED.message,
      ...(body.channel !== undefined ? { channel: body.channel } : {}),
      ...(body.uuid !== undefined ? { uuid: body.uuid } : {}),
      ...(body.user !== undefined ? { user: body.user } : {}),
    };
    // The account API holds no connections: every socket kicked is a gateway's, counted by its reply.
    const { kicked, complete } = await kickConnections(engine, selector);
    return { success: true, kicked, complete };
  },
});
