import type { KickSelector } from '@switchboard/core';
import type { GatewayContext } from '../context';
import { leaveChannel } from './channels';
import type { ConnectionState, Subscription } from './connection';
import { sendChannelFrame } from './events';
import { v4Event } from './frames';
import { closeConnection } from './send';

/**
 * Kicks this node's matching connections (`POST /api/v4/kick` in docs/openapi.yaml). Without `uuid` and `user` the
 * selector matches every connection of the key (of `channel`, when given), V3 and V4; with them
 * it matches V4 subscriptions by their own uuid/user. A V4 socket matched on its primary or on
 * all of its channels is closed; one matched on some secondaries only is unsubscribed from those
 * and told with `system::kicked`.
 */
export function executeKick(ctx: GatewayContext, selector: KickSelector): number {
  const targeted = selector.uuid !== undefined || selector.user !== undefined;
  let affected = 0;
  for (const state of [...ctx.registry.ofKey(selector.key)]) {
    // Closing already (the answering gateway kicks its own before the control channel repeats it).
    if (state.closed || (targeted && state.protocol !== 'v4')) continue;
    const matched = [...state.subs.values()].filter((sub) => matches(sub, selector));
    if (matched.length === 0) continue;
    affected++;
    ctx.meters.kicks[state.protocol].inc();
    if (state.protocol === 'v3' || matched.length === state.subs.size || matched.some((sub) => sub.primary)) {
      closeConnection(state, 'KICKED', selector.reason);
      continue;
    }
    for (const sub of matched) kickFromChannel(ctx, state, sub, selector.reason);
  }
  return affected;
}

function matches(sub: Subscription, selector: KickSelector): boolean {
  if (selector.channel !== undefined && sub.channel !== selector.channel) return false;
  if (selector.uuid !== undefined && sub.uuid !== selector.uuid) return false;
  if (selector.user !== undefined && sub.userIdentity !== selector.user) return false;
  return true;
}

function kickFromChannel(
  ctx: GatewayContext,
  state: ConnectionState,
  sub: Subscription,
  reason: string,
): void {
  sendChannelFrame(ctx, state, sub, v4Event('system::kicked', { channel: sub.channel, reason }));
  leaveChannel(ctx, state, sub);
}
