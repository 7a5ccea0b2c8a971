import type { UpgradeRequest } from '../../transport/types';
import type { Upgrade } from '../dialect';
import { decodeLenient, isFlagOn, parseQuery } from './query';

/**
 * A PieSocket upgrade (docs/protocol.md, "Connecting"): the channel in the path `pattern`
 * matches (its one group), the key and the client's options in the query, the JWT in the query
 * or a `jwt` header. `greets`: whether the query asks for the dialect's greeting.
 */
export function pieSocketUpgrade(
  pattern: RegExp,
  greets: (query: ReadonlyMap<string, string>) => boolean,
): (request: Pick<UpgradeRequest, 'path' | 'query' | 'headers'>) => Upgrade | undefined {
  return (request) => {
    const match = pattern.exec(request.path);
    if (!match) return undefined;
    const query = parseQuery(request.query);
    return {
      key: query.get('api_key') ?? '',
      channel: decodeLenient(match[1] ?? ''),
      token: query.get('jwt') || request.headers.jwt || undefined,
      uuid: query.get('uuid'),
      user: query.get('user') || undefined,
      presence: isFlagOn(query.get('presence')),
      recover: isFlagOn(query.get('recover')),
      notifySelf: isFlagOn(query.get('notify_self')),
      greets: greets(query),
      since: query.get('since'),
      epoch: query.get('epoch'),
    };
  };
}
