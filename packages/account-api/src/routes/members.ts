import type { JsonValue, Protocol } from '@switchboard/core';
import { querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/** A presence member as `/api/members` lists it; `user` is omitted when unknown. */
export interface AccountMember {
  uuid: string;
  user?: JsonValue;
  protocol: Protocol;
}

/**
 * `GET /api/members`: every channel of the key with presence members, V3 and V4 together, as
 * `{"<channel>": [member, …]}`. Channels are in name order; in a channel V3 entries come first,
 * then V4, each most recently active first. One entry per presence connection (not deduplicated:
 * a user on two devices is listed twice, with two uuids). No parameters.
 */
export const membersEndpoint = defineEndpoint({
  path: '/members',
  query: querySchema({}),
  handle: async (key, _query, { engine }): Promise<Record<string, AccountMember[]>> => {
    const channels = await engine.presence.channels(key.key);
    const ordered = [...channels].sort(
      (a, b) => compare(a.channel, b.channel) || compare(a.protocol, b.protocol),
    );
    const grouped = new Map<string, AccountMember[]>();
    for (const { channel, protocol, members } of ordered) {
      const list = grouped.get(channel) ?? [];
      for (const member of members) {
        list.push(
          member.user === undefined
            ? { uuid: member.uuid, protocol }
            : { uuid: member.uuid, user: member.user, protocol },
        );
      }
      if (list.length > 0) grouped.set(channel, list);
    }
    // fromEntries defines own properties, so a channel named "__proto__" stays an ordinary entry.
    return Object.fromEntries(grouped);
  },
});

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
