import type { KickSelector } from '@switchboard/core';
import { history } from '../../api/history';
import { kick } from '../../api/kick';
import { publish } from '../../api/publish';
import { channelField, optionalString } from '../../api/request';
import type { Body } from '../../api/request';
import type { RouteHandler } from '../dialect';
import { FAMILY } from './family';
import { membersV4 } from './members';

/** `POST /api/v4/kick` takes `uuid`, `user` and `channel` (docs/openapi.yaml). */
function targeted(body: Body, base: KickSelector): KickSelector {
  const uuid = optionalString(body, 'uuid', 256);
  const user = optionalString(body, 'user');
  const channel = channelField(body, false);
  return {
    ...base,
    ...(uuid !== undefined ? { uuid } : {}),
    ...(user !== undefined ? { user } : {}),
    ...(channel !== undefined ? { channel } : {}),
  };
}

/** V4 marks JSON objects where they enter. */
const PUBLISHES = { protocol: FAMILY, marksObjects: true };

/** The V4 cluster API (docs/openapi.yaml). */
export const ROUTES: Readonly<Record<string, RouteHandler>> = {
  '/api/v4/publish': (ctx, body) => publish(ctx, PUBLISHES, body),
  '/api/v4/members': membersV4,
  '/api/v4/history': (ctx, body) => history(ctx, FAMILY, body),
  '/api/v4/kick': (ctx, body) => kick(ctx, body, targeted),
};
