import { createHash } from 'node:crypto';

/**
 * The position of a topic without history (never published to, expired, lost) is an **empty
 * epoch** at offset 0: a token that the engine derives and stores nowhere, so reading such a
 * topic leaves nothing behind (docs/protocol.md, "A channel without history"). It is
 * `_e<stamp><t0>`, 27 characters: `stamp` (12 hex digits) names the engine's state it was read
 * in (Redis: the master's generation, its `evicted_keys` and the retention TTL; memory: the
 * engine instance and the TTL), `t0` (13 decimal digits) the engine clock's time of the read in
 * ms (Redis: `TIME` on the topic's master; memory: `Date.now()`). Epochs the engines draw
 * (`newEpoch`) have at most 19 characters, so an empty epoch never equals a real one.
 *
 * The engine judges a token it is handed back (`HistoryQuery.at`) against the present, in the
 * same clock: see `judgeEmptyEpoch`.
 */
export interface EmptyEpoch {
  readonly stamp: string;
  /** Engine clock (ms) of the read that found the topic without history. */
  readonly t0: number;
}

const EMPTY_EPOCH = /^_e([0-9a-f]{12})(\d{13})$/;

/** The empty epoch of `stamp` read at `t0` (ms, 13 digits until the year 2286). */
export function emptyEpoch(stamp: string, t0: number): string {
  return `_e${stamp}${String(Math.floor(t0)).padStart(13, '0')}`;
}

/** Whether `epoch` is an empty epoch (a position of a topic without history), and its parts. */
export function parseEmptyEpoch(epoch: string | undefined): EmptyEpoch | undefined {
  const match = epoch === undefined ? null : EMPTY_EPOCH.exec(epoch);
  return match ? { stamp: match[1]!, t0: Number(match[2]) } : undefined;
}

export const isEmptyEpoch = (epoch: string | undefined): boolean => parseEmptyEpoch(epoch) !== undefined;

/** The 12 hex digits of a stamp: a digest of what must not change between a read and its judgment. */
export function stampOf(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 12);
}

/** How far ahead of the engine's clock a token's `t0` may be (a clock stepped back a little). */
export const EMPTY_EPOCH_CLOCK_TOLERANCE_MS = 1000;

/**
 * What an empty epoch `at`, read in the state `stamp` names, still says at engine time `now`
 * (ms) with retention TTL `ttlMs`, where the topic's stream now either does not exist
 * (`createdAt` undefined) or was created (its first publication) at `createdAt`:
 *
 * - `'same'` (no stream): nothing was published since the read. A stream created after `t0`
 *   lives at least `ttlMs` after its creation (every publication renews that), so none can have
 *   come and gone unseen while `now - t0 < ttlMs`.
 * - `'follows'` (a stream): it is the first one created since the read, so its offsets continue
 *   the empty epoch's offset 0. An earlier one created after `t0` would have had to expire
 *   before this one was created, at least `ttlMs` after `t0`: `createdAt - t0 < ttlMs` rules it
 *   out.
 * - `undefined`: neither can be told (another stamp: a restart, a failover, an eviction or another
 *   TTL; a read older than the TTL; a stream of unknown creation; a `t0` ahead of the clock).
 *
 * Both clocks are the engine's own (on Redis one master's `TIME`, the stamp names the master),
 * so a clock stepped forward shows as elapsed time and expiries it hastened are accounted for.
 */
export function judgeEmptyEpoch(
  at: string | undefined,
  stamp: string,
  now: number,
  ttlMs: number,
  createdAt: number | undefined,
): 'same' | 'follows' | undefined {
  const token = parseEmptyEpoch(at);
  if (!token || token.stamp !== stamp || token.t0 > now + EMPTY_EPOCH_CLOCK_TOLERANCE_MS) return undefined;
  if (createdAt === undefined) return now - token.t0 < ttlMs ? 'same' : undefined;
  return createdAt - token.t0 < ttlMs ? 'follows' : undefined;
}
