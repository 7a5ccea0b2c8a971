import { AppError, CLOSE_CODES, EngineUnavailableError, kickConnections } from '@switchboard/core';
import type { KickSelector, Protocol } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { executeKick } from '../ws/kick';
import { authenticate, channelField, optionalString } from './request';
import type { Body } from './request';

/**
 * `POST /api/kick` kicks every connection of the key; `POST /api/v4/kick` takes `uuid`, `user`
 * and `channel` (docs/openapi.yaml). Targeted fields on the V3 path are refused: silently kicking everyone
 * instead would be dangerous. The kick reaches every node through the broker's control channel.
 *
 * The answer's `kicked` counts the sockets this gateway closed or removed the channel from: it
 * kicks its own first, then tells every node. The control channel is publish/subscribe without
 * replies, so the other gateways' kicks are not counted (docs/protocol.md, "Kicks").
 *
 * While the engine is known to be unreachable the kick is refused before anything is closed: a
 * 503 means the request was not carried out, and a kick done on this node only would leave the
 * other nodes' matches connected without saying so.
 */
export async function kick(ctx: GatewayContext, protocol: Protocol, body: Body): Promise<object> {
  const record = await authenticate(ctx, body);
  const reason = optionalString(body, 'reason') ?? CLOSE_CODES.KICKED.message;
  let selector: KickSelector = { key: record.key, reason };
  if (protocol === 'v3') {
    const targeted = ['uuid', 'user', 'channel', 'channelId', 'roomId'].filter(
      (field) => body[field] !== undefined,
    );
    if (targeted.length > 0) {
      throw new AppError(
        'SB_INVALID_FIELD',
        `Invalid field "${targeted[0]}": uuid, user and channel are accepted only on /api/v4/kick; /api/kick kicks every connection of the key`,
      );
    }
  } else {
    const uuid = optionalString(body, 'uuid', 256);
    const user = optionalString(body, 'user');
    const channel = channelField(body, false);
    selector = {
      ...selector,
      ...(uuid !== undefined ? { uuid } : {}),
      ...(user !== undefined ? { user } : {}),
      ...(channel !== undefined ? { channel } : {}),
    };
  }
  if (!ctx.engine.isAvailable()) throw new EngineUnavailableError();
  const kicked = executeKick(ctx, selector);
  await kickConnections(ctx.engine, selector);
  return { success: true, kicked };
}
