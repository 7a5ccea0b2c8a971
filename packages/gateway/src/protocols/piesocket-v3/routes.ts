import { AppError } from '@switchboard/core';
import type { KickSelector } from '@switchboard/core';
import { history } from '../../api/history';
import { kick } from '../../api/kick';
import { publish } from '../../api/publish';
import type { Body } from '../../api/request';
import type { RouteHandler } from '../dialect';
import { FAMILY } from './family';
import { membersV3 } from './members';

/**
 * `POST /api/kick` kicks every connection of the key. Targeted fields are refused: silently
 * kicking everyone instead would be dangerous.
 */
function keyWide(body: Body, base: KickSelector): KickSelector {
  const targeted = ['uuid', 'user', 'channel', 'channelId', 'roomId'].filter(
    (field) => body[field] !== undefined,
  );
  if (targeted.length > 0) {
    throw new AppError(
      'SB_INVALID_FIELD',
      `Invalid field "${targeted[0]}": uuid, user and channel are accepted only on /api/v4/kick; /api/kick kicks every connection of the key`,
    );
  }
  return base;
}

/** V3 relays strings verbatim: they are never parsed. */
const PUBLISHES = { protocol: FAMILY, marksObjects: false };

/** The V3 cluster API (docs/openapi.yaml). */
export const ROUTES: Readonly<Record<string, RouteHandler>> = {
  '/api/publish': (ctx, body) => publish(ctx, PUBLISHES, body),
  '/api/members': membersV3,
  '/api/history': (ctx, body) => history(ctx, FAMILY, body),
  '/api/kick': (ctx, body) => kick(ctx, body, keyWide),
};
