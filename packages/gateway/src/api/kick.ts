import { CLOSE_CODES, EngineUnavailableError, kickConnections } from '@switchboard/core';
import type { KickSelector } from '@switchboard/core';
import { authenticate, optionalString } from './request';
import type { Body } from './request';
import type { ApiDeps } from './deps';

/**
 * A kick route (docs/openapi.yaml): the key's connections that `selectorOf` picks out of the
 * body, starting from every connection of the key (`base`). The kick reaches every node through
 * the broker's control channel.
 *
 * The answer's `kicked` counts the sockets closed or removed from the channel on every gateway:
 * this one kicks its own first (they are gone even if the engine is slow), then tells every node
 * and adds up their replies. When a node does not reply within the deadline (stopped, slow, or
 * too old to reply) the answer says `complete: false` with what was counted; the kick itself
 * reaches every node either way (docs/protocol.md, "Kicks").
 *
 * While the engine is known to be unreachable the kick is refused before anything is closed: a
 * 503 means the request was not carried out, and a kick done on this node only would leave the
 * other nodes' matches connected without saying so.
 */
export async function kick(
  ctx: ApiDeps,
  body: Body,
  selectorOf: (body: Body, base: KickSelector) => KickSelector,
): Promise<object> {
  const record = await authenticate(ctx, body);
  const reason = optionalString(body, 'reason') ?? CLOSE_CODES.KICKED.message;
  const selector = selectorOf(body, { key: record.key, reason });
  if (!ctx.engine.isAvailable()) throw new EngineUnavailableError();
  const here = ctx.kickHere(selector);
  const elsewhere = await kickConnections(ctx.engine, selector);
  return { success: true, kicked: here + elsewhere.kicked, complete: elsewhere.complete };
}
