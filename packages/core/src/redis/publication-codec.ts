import type { Publication } from '../broker/broker';
import { MAX_EPOCH_LENGTH } from '../history/epochs';
import type { Topic } from '../types';

/**
 * Wire form of a publication on its topic's pub/sub channel (the topic is the channel itself),
 * and of an entry of its topic's stream:
 *
 *   <flags>|<origin>|[<acceptedAt>|][<sender>|][<offset>|<epoch>|][<to length>|<to>]<body>
 *
 * `flags` holds `b` (binary), `s` (stampable), `m` (an `acceptedAt` follows, decimal ms), `x` (the
 * sending connection's id follows, no `|` in it), `o` (the
 * stream position follows: decimal offset, epoch of A-Z a-z 0-9 _ -), `t` (a `to` follows, its
 * length in UTF-16 code units), `A`/`C` (source api/client), each at most once. The body is
 * carried verbatim: no escaping, so encoding costs one concatenation and decoding a few
 * `indexOf`s, whatever the body holds (JSON would escape every quote of a JSON body and parse it
 * again on every node).
 *
 * A stream publication is encoded by the publish script, which alone knows its position: the
 * broker passes `publicationHead` and `publicationTail` and the script concatenates
 * `head .. offset .. '|' .. epoch .. '|' .. tail`.
 */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const SOURCE_FLAG = { api: 'A', client: 'C' } as const;

/**
 * `<flags>|<origin>|` by the flags' combination (`flagsIndex`) for the last origin encoded: a
 * node encodes its own publications (one origin) with a few combinations, and building the text
 * cost a dozen concatenations a publication (docs/performance.md, "Pusher fan-out against the
 * ceiling").
 */
let prefixOrigin: string | undefined;
let prefixes: Array<string | undefined> = [];
/** The last `acceptedAt` encoded and its text with its separator: a turn's publications share a millisecond. */
let lastAccepted = Number.NaN;
let lastAcceptedText = '';

/** The combination of flags `head` writes, 0 to 191. */
function flagsIndex(p: Publication, positioned: boolean): number {
  const bits =
    (p.binary ? 1 : 0) |
    (p.stampable ? 2 : 0) |
    (p.acceptedAt !== undefined ? 4 : 0) |
    (p.sender !== undefined ? 8 : 0) |
    (positioned ? 16 : 0) |
    (p.to !== undefined ? 32 : 0);
  return bits * 3 + (p.source === 'api' ? 1 : p.source === 'client' ? 2 : 0);
}

function prefixOf(p: Publication, positioned: boolean): string {
  if (p.origin !== prefixOrigin) {
    prefixOrigin = p.origin;
    prefixes = [];
  }
  const index = flagsIndex(p, positioned);
  let prefix = prefixes[index];
  if (prefix === undefined) {
    const flags =
      (p.binary ? 'b' : '') +
      (p.stampable ? 's' : '') +
      (p.acceptedAt !== undefined ? 'm' : '') +
      (p.sender !== undefined ? 'x' : '') +
      (positioned ? 'o' : '') +
      (p.to !== undefined ? 't' : '') +
      (p.source ? SOURCE_FLAG[p.source] : '');
    prefix = `${flags}|${p.origin}|`;
    prefixes[index] = prefix;
  }
  return prefix;
}

/** Everything before the stream position; `positioned` adds the `o` flag for one to follow. */
function head(p: Publication, positioned: boolean): string {
  const prefix = prefixOf(p, positioned);
  const { acceptedAt, sender } = p;
  let text = prefix;
  if (acceptedAt !== undefined) {
    if (acceptedAt !== lastAccepted) {
      lastAcceptedText = `${acceptedAt}|`;
      lastAccepted = acceptedAt;
    }
    text += lastAcceptedText;
  }
  return sender === undefined ? text : `${text}${sender}|`;
}

/** Everything after the stream position. */
export function publicationTail(p: Publication): string {
  return p.to !== undefined ? `${p.to.length}|${p.to}${p.body}` : p.body;
}

/** The head of a stream publication, whose position the publish script appends. */
export function publicationHead(p: Publication): string {
  return head(p, true);
}

export function encodePublication(p: Publication): string {
  if (p.offset !== undefined && p.epoch !== undefined) {
    return `${head(p, true)}${p.offset}|${p.epoch}|${publicationTail(p)}`;
  }
  return head(p, false) + publicationTail(p);
}

const BINARY = 1;
const STAMPABLE = 2;
const ACCEPTED = 4;
const POSITIONED = 8;
const TO = 16;
const API = 32;
const CLIENT = 64;
const SENDER = 128;

/** The bit of a flag character, 0 for any other character. */
function flagBit(code: number): number {
  switch (code) {
    case 0x62 /* b */:
      return BINARY;
    case 0x73 /* s */:
      return STAMPABLE;
    case 0x6d /* m */:
      return ACCEPTED;
    case 0x78 /* x */:
      return SENDER;
    case 0x6f /* o */:
      return POSITIONED;
    case 0x74 /* t */:
      return TO;
    case 0x41 /* A */:
      return API;
    case 0x43 /* C */:
      return CLIENT;
    default:
      return 0;
  }
}

/**
 * The inverse of `encodePublication`; `null` for a message that is not one: an unknown or
 * repeated flag, a missing separator, a number that is not a decimal integer, an epoch that is
 * not a token, an empty origin, a `to` longer than what follows. It never throws and never returns a field it
 * did not find whole.
 */
export function decodePublication(topic: Topic, wire: string): Publication | null {
  const flagsEnd = wire.indexOf('|');
  if (flagsEnd < 0) return null;
  let flags = 0;
  for (let i = 0; i < flagsEnd; i++) {
    const bit = flagBit(wire.charCodeAt(i));
    if (bit === 0 || (flags & bit) !== 0) return null;
    flags |= bit;
  }
  if ((flags & API) !== 0 && (flags & CLIENT) !== 0) return null;
  const originEnd = wire.indexOf('|', flagsEnd + 1);
  if (originEnd <= flagsEnd + 1) return null;
  let bodyStart = originEnd + 1;
  let acceptedAt = -1;
  if ((flags & ACCEPTED) !== 0) {
    const acceptedEnd = wire.indexOf('|', bodyStart);
    acceptedAt = decimalAt(wire, bodyStart, acceptedEnd);
    if (acceptedAt < 0) return null;
    bodyStart = acceptedEnd + 1;
  }
  let sender: string | undefined;
  if ((flags & SENDER) !== 0) {
    const senderEnd = wire.indexOf('|', bodyStart);
    if (senderEnd <= bodyStart) return null;
    sender = wire.slice(bodyStart, senderEnd);
    bodyStart = senderEnd + 1;
  }
  let offset = -1;
  let epoch = '';
  if ((flags & POSITIONED) !== 0) {
    const offsetEnd = wire.indexOf('|', bodyStart);
    offset = decimalAt(wire, bodyStart, offsetEnd);
    if (offset < 1) return null;
    const epochEnd = wire.indexOf('|', offsetEnd + 1);
    if (!isToken(wire, offsetEnd + 1, epochEnd)) return null;
    epoch = wire.slice(offsetEnd + 1, epochEnd);
    bodyStart = epochEnd + 1;
  }
  let to: string | undefined;
  if ((flags & TO) !== 0) {
    const lengthEnd = wire.indexOf('|', bodyStart);
    const length = decimalAt(wire, bodyStart, lengthEnd);
    if (length < 0 || lengthEnd + 1 + length > wire.length) return null;
    to = wire.slice(lengthEnd + 1, lengthEnd + 1 + length);
    bodyStart = lengthEnd + 1 + length;
  }
  // Plain assignments: conditional object spreads cost about 1 µs per message here.
  const publication: Mutable<Publication> = {
    topic,
    body: wire.slice(bodyStart),
    origin: wire.slice(flagsEnd + 1, originEnd),
  };
  if ((flags & BINARY) !== 0) publication.binary = true;
  if ((flags & STAMPABLE) !== 0) publication.stampable = true;
  if (to !== undefined) publication.to = to;
  if ((flags & API) !== 0) publication.source = 'api';
  else if ((flags & CLIENT) !== 0) publication.source = 'client';
  if (acceptedAt >= 0) publication.acceptedAt = acceptedAt;
  if (sender !== undefined) publication.sender = sender;
  if (offset > 0) {
    publication.offset = offset;
    publication.epoch = epoch;
  }
  return publication;
}

/** Longest decimal accepted: 15 digits stay exact in a double (offsets, ms timestamps, lengths). */
const MAX_DIGITS = 15;

/** The non-negative integer written in `wire[start, end)`, -1 if it is not one. */
function decimalAt(wire: string, start: number, end: number): number {
  // Hand-rolled: Number(wire.slice(…)) costs about 1 µs per message on the hot path.
  if (end <= start || end - start > MAX_DIGITS) return -1;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = wire.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Whether `wire[start, end)` is 1 to MAX_EPOCH_LENGTH characters of A-Z a-z 0-9 _ -. */
function isToken(wire: string, start: number, end: number): boolean {
  if (end <= start || end - start > MAX_EPOCH_LENGTH) return false;
  for (let i = start; i < end; i++) {
    const c = wire.charCodeAt(i);
    const ok =
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      c === 0x5f ||
      c === 0x2d;
    if (!ok) return false;
  }
  return true;
}
