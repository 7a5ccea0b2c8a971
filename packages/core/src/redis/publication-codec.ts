import type { Publication } from '../broker/broker';
import type { Topic } from '../types';

/**
 * Wire form of a publication on its topic's pub/sub channel (the topic is the channel itself):
 *
 *   <flags>|<origin>|[<to length>|<to>]<body>
 *
 * `flags` holds `b` (binary), `s` (stampable), `t` (a `to` follows). The body is carried verbatim:
 * no escaping, so encoding costs one concatenation and decoding three `indexOf`s, whatever the
 * body holds (JSON would escape every quote of a JSON body and parse it again on every node).
 */
export function encodePublication(p: Publication): string {
  const flags = `${p.binary ? 'b' : ''}${p.stampable ? 's' : ''}${p.to !== undefined ? 't' : ''}`;
  const to = p.to !== undefined ? `${p.to.length}|${p.to}` : '';
  return `${flags}|${p.origin}|${to}${p.body}`;
}

/** The inverse of `encodePublication`; `null` for a message that is not one. */
export function decodePublication(topic: Topic, wire: string): Publication | null {
  const flagsEnd = wire.indexOf('|');
  const originEnd = flagsEnd < 0 ? -1 : wire.indexOf('|', flagsEnd + 1);
  if (originEnd < 0) return null;
  const flags = wire.slice(0, flagsEnd);
  let bodyStart = originEnd + 1;
  let to: string | undefined;
  if (flags.includes('t')) {
    const lengthEnd = wire.indexOf('|', bodyStart);
    const length = Number(wire.slice(bodyStart, lengthEnd));
    if (lengthEnd < 0 || !Number.isInteger(length)) return null;
    to = wire.slice(lengthEnd + 1, lengthEnd + 1 + length);
    bodyStart = lengthEnd + 1 + length;
  }
  return {
    topic,
    body: wire.slice(bodyStart),
    origin: wire.slice(flagsEnd + 1, originEnd),
    ...(flags.includes('b') ? { binary: true } : {}),
    ...(flags.includes('s') ? { stampable: true } : {}),
    ...(to !== undefined ? { to } : {}),
  };
}
