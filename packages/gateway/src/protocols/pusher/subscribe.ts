import {
  type AppCredentials,
  DEFAULT_IDENTITY_LIMITS,
  type IdentityLimits,
  type PresenceMember,
  parseChannelData,
  verifyChannelAuth,
} from './auth';
import type { PusherChannel } from './channels';
import type { SubscriptionErrorType } from './frames';

/**
 * The checks of a `pusher:subscribe` and of a client event that need no shared state
 * (docs/pusher.md, "Channels"): the gateway runs these, then its own (quotas, member limits).
 */

export interface SubscriptionRefusal {
  readonly type: SubscriptionErrorType;
  readonly error: string;
  readonly status: number;
}

export type SubscriptionCheck =
  | { readonly ok: true; readonly member?: PresenceMember }
  | { readonly ok: false; readonly refusal: SubscriptionRefusal };

const refused = (error: string, status = 401): SubscriptionCheck => ({
  ok: false,
  refusal: { type: 'AuthError', error, status },
});

/**
 * Authorizes a subscription of socket `socketId` (signed in as `signedInUserId`, if it is):
 * public and cache channels need nothing; private and encrypted channels a valid `auth`;
 * presence channels a valid `auth` over `channel_data` naming the member; `#server-to-user-<id>`
 * a socket signed in as `<id>`.
 */
export function authorizeSubscription(
  app: AppCredentials,
  socketId: string,
  request: {
    readonly channel: PusherChannel;
    readonly auth?: string | undefined;
    readonly channelData?: string | undefined;
  },
  signedInUserId?: string,
  limits: IdentityLimits = DEFAULT_IDENTITY_LIMITS,
): SubscriptionCheck {
  const { channel } = request;
  switch (channel.kind) {
    case 'public':
      return { ok: true };
    case 'server-to-user':
      return signedInUserId !== undefined && signedInUserId === channel.userId
        ? { ok: true }
        : refused(
            `Only a socket signed in as user '${channel.userId}' may subscribe to ${channel.name}`,
            403,
          );
    case 'private':
    case 'encrypted': {
      if (request.auth === undefined) return refused(`Subscribing to ${channel.name} requires auth`);
      const verdict = verifyChannelAuth(app, { socketId, channel: channel.name, auth: request.auth });
      return verdict.ok ? { ok: true } : refused(verdict.message);
    }
    case 'presence': {
      if (request.auth === undefined) return refused(`Subscribing to ${channel.name} requires auth`);
      if (request.channelData === undefined)
        return refused(`Subscribing to ${channel.name} requires channel_data {user_id, user_info?}`);
      const verdict = verifyChannelAuth(app, {
        socketId,
        channel: channel.name,
        auth: request.auth,
        channelData: request.channelData,
      });
      if (!verdict.ok) return refused(verdict.message);
      const member = parseChannelData(request.channelData, limits);
      return member.ok ? { ok: true, member: member.value } : refused(member.message, 400);
    }
  }
}

/**
 * Why a client event may not be relayed, or undefined when it may: only on private and presence
 * channels (never encrypted ones, whose payloads the server cannot vouch for, nor public ones), on
 * a channel the socket is subscribed to, when the key allows client messages.
 */
export function clientEventProblem(
  channel: PusherChannel,
  subscribed: boolean,
  clientMessagesAllowed: boolean,
): string | undefined {
  if (!clientMessagesAllowed) return 'Client events are disabled for this app';
  if (channel.kind === 'encrypted')
    return `Client events are not allowed on encrypted channels (${channel.name})`;
  if (!channel.clientEvents)
    return `Client events are only allowed on private and presence channels (${channel.name})`;
  if (!subscribed) return `Client event on ${channel.name}, which this socket is not subscribed to`;
  return undefined;
}
