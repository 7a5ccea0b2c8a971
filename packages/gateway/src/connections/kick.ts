import type { KickSelector } from '@switchboard/core';
import { leaveChannel } from './channels';
import type { Subscription } from './connection';
import { closeConnection, sendTo } from '../fanout/send';
import type { ChannelDeps } from './channels';

/**
 * Kicks this node's matching connections (`POST /api/v4/kick` in docs/openapi.yaml). Without `uuid` and `user` the
 * selector matches every connection of the key (of `channel`, when given), of every dialect; with
 * them it matches the subscriptions of dialects that take targeted kicks, by their own uuid/user.
 * A socket matched on its primary or on all of its channels is closed; one matched on some
 * secondaries only, where its dialect allows, is taken out of those and told (V4 `system::kicked`).
 */
export function executeKick(ctx: ChannelDeps, selector: KickSelector): number {
  if (selector.signedIn !== undefined) return kickSignedIn(ctx, selector, selector.signedIn);
  const targeted = selector.uuid !== undefined || selector.user !== undefined;
  let affected = 0;
  for (const state of ctx.registry.ofKey(selector.key)) {
    const { kick } = state.dialect;
    // Closing already (the answering gateway kicks its own before the control channel repeats it;
    // it is counted once, by that first kick).
    if (state.closed || (targeted && !kick.targeted)) continue;
    const matched = [...state.subs.values()].filter((sub) => matches(sub, selector));
    if (matched.length === 0) continue;
    affected++;
    ctx.meters.kicks[state.dialect.family]?.inc();
    const { kicked } = kick;
    if (!kicked || matched.length === state.subs.size || matched.some((sub) => sub.primary)) {
      closeConnection(state, 'KICKED', selector.reason);
      continue;
    }
    for (const sub of matched) {
      sendTo(ctx, state, kicked(sub, selector.reason));
      leaveChannel(ctx, state, sub);
    }
  }
  return affected;
}

/** The key's connections signed in as `user`, closed whatever their channels. */
function kickSignedIn(ctx: ChannelDeps, selector: KickSelector, user: string): number {
  let affected = 0;
  for (const state of ctx.registry.ofKey(selector.key)) {
    if (state.closed || state.signedIn !== user) continue;
    affected++;
    ctx.meters.kicks[state.dialect.family]?.inc();
    closeConnection(state, 'KICKED', selector.reason);
  }
  return affected;
}

function matches(sub: Subscription, selector: KickSelector): boolean {
  if (selector.channel !== undefined && sub.channel !== selector.channel) return false;
  if (selector.uuid !== undefined && sub.uuid !== selector.uuid) return false;
  if (selector.user !== undefined && sub.userIdentity !== selector.user) return false;
  return true;
}

/**
 * After a `key-changed` announcement: when `key` no longer exists, closes this node's sockets of
 * the key whose dialect closes revoked sockets (`Dialect.kick.revoked`: Pusher's 4003). The key
 * is read from the engine, not the cache (just invalidated anyway); when the engine cannot answer,
 * nothing is closed (a later announcement or the socket's own close ends it).
 */
export async function closeRevoked(ctx: ChannelDeps, key: string): Promise<number> {
  const open = ctx.registry.ofKey(key).filter((state) => state.dialect.kick.revoked && !state.closed);
  if (open.length === 0) return 0;
  const record = await ctx.engine.keys.get(key).catch((error: unknown) => {
    ctx.logger.warn({ err: error }, 'revoked key check failed; its sockets stay open');
    return undefined;
  });
  if (record !== null) return 0;
  let closed = 0;
  for (const state of open) {
    const revoked = state.dialect.kick.revoked;
    if (!revoked || state.closed) continue;
    closeConnection(state, revoked.code, revoked.text);
    closed++;
  }
  return closed;
}
