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
  for (const state of [...ctx.registry.ofKey(selector.key)]) {
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
  for (const state of [...ctx.registry.ofKey(selector.key)]) {
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
