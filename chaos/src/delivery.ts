import { ranges } from '@switchboard/harness';
import type { Ack } from './publisher';
import type { PositionEntry, Standing } from '@switchboard/harness';
import type { AppTrack, ChannelTrack } from './fleet';

/**
 * What one subscription received, against what the publisher was told (docs/protocol.md,
 * "History and recovery"): every acknowledged publication between the subscription's first
 * position and where it ended is received exactly once, in offset order within its epoch, or a
 * `recovered: false` position covers it. Checked on the wire, so a duplicate the client library
 * would drop still counts.
 */

/** Orders positions across epochs: epochs by when the run first saw them, then offsets. */
export type EpochRank = (epoch: string) => number;

/** The order of a topic's epochs: first seen in an acknowledgement or in any client's position. */
export function epochRanking(acks: readonly Ack[], tracks: readonly ChannelTrack[]): EpochRank {
  const firstSeen = new Map<string, number>();
  const see = (epoch: string, at: number): void => {
    const known = firstSeen.get(epoch);
    if (known === undefined || at < known) firstSeen.set(epoch, at);
  };
  for (const ack of acks) see(ack.epoch, ack.ackedAt);
  for (const track of tracks) for (const p of track.positions) see(p.epoch, p.at);
  const order = [...firstSeen].sort((a, b) => a[1] - b[1]).map(([epoch]) => epoch);
  return (epoch) => {
    const rank = order.indexOf(epoch);
    return rank < 0 ? Number.MAX_SAFE_INTEGER : rank;
  };
}

export interface DeliveryStats {
  publications: number;
  resumes: number;
  recovered: number;
  /** Resumes answered `recovered: false`. */
  unrecovered: number;
  /** `recovered: false` positions in the middle of a subscription (a gateway that missed publications). */
  gapNotices: number;
  /** Publications replayed from history by `recovered: true` resumes. */
  caughtUp: number;
  /** Acknowledged publications the subscription was told it may have lost. */
  covered: number;
}

/**
 * The position of a channel without history: an empty epoch, stored nowhere, at offset 0
 * (docs/protocol.md, "A channel without history"). Its first publication's epoch follows it.
 */
const isEmptyEpoch = (epoch: string): boolean => /^_e[0-9a-f]{12}\d{13}$/.test(epoch);

const same = (a: Standing | undefined, b: Standing | undefined): boolean =>
  a !== undefined && b !== undefined && a.epoch === b.epoch && a.offset === b.offset;

const show = (s: Standing | undefined): string => (s ? `${s.epoch}:${s.offset}` : '-');

export function describePositions(track: ChannelTrack): string {
  return track.positions
    .map(
      (p) =>
        `#${p.session} ${p.epoch}:${p.offset} ${p.recovered ?? '-'}(+${p.missed})${p.since ? ` since ${show(p.since)}` : ''}`,
    )
    .join(', ');
}

/**
 * Problems of one subscription (none: it kept the guarantee). `end` is where it must have got
 * to: the topic's final position for a client still connected at the end of the run; undefined
 * for a client the churn closed (checked up to where it stood then).
 */
export function deliveryProblems(
  track: ChannelTrack,
  acks: readonly Ack[],
  rank: EpochRank,
  end: Standing | undefined,
  stats: DeliveryStats,
): string[] {
  const problems = [...track.violations];
  const cmp = (a: Standing, b: Standing): number => rank(a.epoch) - rank(b.epoch) || a.offset - b.offset;
  const covers: Array<[Standing, Standing]> = [];
  const received = new Map<string, unknown>();
  const duplicated: string[] = [];
  const jumps: string[] = [];
  let at: Standing | undefined;
  let start: Standing | undefined;
  let expected = 0;
  let lastSession = 0;
  for (const entry of track.entries) {
    if (entry.kind === 'position') {
      const firstOfSocket = entry.session !== lastSession;
      problems.push(...positionProblems(entry, at, firstOfSocket));
      lastSession = entry.session;
      if (entry.recovered === false && at) {
        covers.push([at, { epoch: entry.epoch, offset: entry.offset }]);
        if (firstOfSocket) stats.unrecovered++;
        else stats.gapNotices++;
      }
      if (entry.since) stats.resumes++;
      if (entry.recovered === true && entry.since) {
        stats.recovered++;
        stats.caughtUp += entry.missed;
        at = entry.since;
      } else at = { epoch: entry.epoch, offset: entry.offset };
      start ??= at;
      expected = at.offset + 1;
      continue;
    }
    stats.publications++;
    const id = `${entry.epoch}:${entry.offset}`;
    if (received.has(id)) duplicated.push(id);
    received.set(id, entry.seq);
    if (entry.offset !== expected)
      jumps.push(`${entry.offset} where ${expected} was next in ${entry.epoch} (socket ${entry.session})`);
    expected = entry.offset + 1;
    at = { epoch: entry.epoch, offset: entry.offset };
  }
  if (duplicated.length > 0) problems.push(`received twice: ${duplicated.slice(0, 8).join(', ')}`);
  if (jumps.length > 0) problems.push(`out of sequence: ${jumps.slice(0, 5).join('; ')}`);
  if (!start || !at) return end ? [...problems, 'never got a position'] : problems;
  const until = end ?? at;
  if (end && !same(at, end)) problems.push(`ended at ${show(at)}, the topic at ${show(end)}`);
  const lost: Ack[] = [];
  const wrong: string[] = [];
  for (const ack of acks) {
    if (cmp(ack, start) <= 0 || cmp(ack, until) > 0) continue;
    const id = `${ack.epoch}:${ack.offset}`;
    if (received.has(id)) {
      if (received.get(id) !== ack.seq)
        wrong.push(`${id} carried seq ${String(received.get(id))}, acknowledged as ${ack.seq}`);
    } else if (covers.some(([from, to]) => cmp(ack, from) > 0 && cmp(ack, to) <= 0)) stats.covered++;
    else lost.push(ack);
  }
  for (const epoch of new Set(lost.map((ack) => ack.epoch)))
    problems.push(
      `silently lost in ${epoch}: ${ranges(lost.filter((ack) => ack.epoch === epoch).map((ack) => ack.offset))}`,
    );
  if (wrong.length > 0) problems.push(`wrong content: ${wrong.slice(0, 3).join('; ')}`);
  return problems;
}

/**
 * A position must agree with itself and with where the subscription stood: a resume asks from
 * its standing, `recovered: true` stays in one epoch (or goes on from an empty epoch into the
 * epoch that follows it) and counts what it replays, and a position in the middle of a
 * subscription (a gateway that missed publications) says `false`, unless it moves from an empty
 * epoch to the channel's first epoch at offset 0, where nothing can be lost.
 */
function positionProblems(
  position: PositionEntry,
  at: Standing | undefined,
  firstOfSocket: boolean,
): string[] {
  const { since } = position;
  const where = `(socket ${position.session})`;
  if (!firstOfSocket) {
    const firstEpoch =
      position.recovered === true && position.offset === 0 && at !== undefined && isEmptyEpoch(at.epoch);
    return position.recovered === false || firstEpoch
      ? []
      : [`a position in the middle of a subscription says recovered ${String(position.recovered)} ${where}`];
  }
  const problems: string[] = [];
  if (at && !since) problems.push(`resubscribed without since/epoch from ${show(at)} ${where}`);
  if (at && since && !same(at, since))
    problems.push(`resumed from ${show(since)} while at ${show(at)} ${where}`);
  if (since && position.recovered === undefined) problems.push(`a resume without recovered ${where}`);
  if (since && position.recovered === true) {
    if (since.epoch !== position.epoch && !isEmptyEpoch(since.epoch))
      problems.push(`recovered: true from epoch ${since.epoch} into ${position.epoch} ${where}`);
    else if (position.missed !== position.offset - since.offset)
      problems.push(`missed ${position.missed} resuming from ${since.offset} to ${position.offset} ${where}`);
  }
  return problems;
}

/**
 * The application saw what the wire carried: the same publications in the same order, and one
 * `recovered`/`unrecovered` event per such position (the client library adds and drops nothing
 * when the server keeps its guarantee).
 */
export function appProblems(track: ChannelTrack, app: AppTrack): string[] {
  const wire = track.publications.map((p) => `${p.epoch}:${p.offset}:${String(p.seq)}`);
  const seen = app.offsets.map((p) => `${p.epoch ?? '-'}:${p.offset ?? '-'}:${String(p.seq)}`);
  const problems: string[] = [];
  const firstDiff = wire.findIndex((id, i) => seen[i] !== id);
  if (wire.length !== seen.length || firstDiff >= 0) {
    const i = firstDiff >= 0 ? firstDiff : Math.min(wire.length, seen.length);
    problems.push(
      `the application got ${seen.length} publications, the wire carried ${wire.length}; first difference at #${i + 1}: app ${seen[i] ?? 'none'}, wire ${wire[i] ?? 'none'}`,
    );
  }
  const wireUnrecovered = track.positions.filter((p) => p.recovered === false).length;
  if (app.unrecovered.length !== wireUnrecovered)
    problems.push(
      `${app.unrecovered.length} unrecovered events for ${wireUnrecovered} recovered: false positions`,
    );
  // A resume's answer; a channel's first epoch in the middle of a subscription is no event.
  const wireRecovered = track.positions.filter((p) => p.recovered === true && p.since).length;
  if (app.recovered.length !== wireRecovered)
    problems.push(`${app.recovered.length} recovered events for ${wireRecovered} recovered: true resumes`);
  return problems;
}
