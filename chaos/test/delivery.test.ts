import { ranges } from '@switchboard/harness';
import { deliveryProblems, epochRanking } from '../src/delivery';
import type { DeliveryStats } from '../src/delivery';
import { ChannelTrack } from '../src/fleet';
import type { Ack } from '../src/publisher';

/** A track from a compact script: `P epoch offset [recovered since]` and `M offset` (a publication). */
function track(...script: Array<[string, ...unknown[]]>): ChannelTrack {
  const t = new ChannelTrack('v4', 'room', false);
  let session = 0;
  let epoch = '';
  let at = 0;
  for (const [kind, ...args] of script) {
    at++;
    if (kind === 'P') {
      const [e, offset, recovered, since] = args as [string, number, boolean | undefined, number | undefined];
      session++;
      epoch = e;
      const sinceStanding = since === undefined ? undefined : { epoch: t.epoch!, offset: since };
      t.entries.push({
        kind: 'position',
        session,
        at,
        epoch: e,
        offset,
        recovered,
        missed: recovered === true && since !== undefined ? offset - since : 0,
        since: sinceStanding,
      });
      t.epoch = e;
      t.offset = offset;
    } else {
      const offset = args[0] as number;
      t.entries.push({ kind: 'publication', session, at, epoch, offset, seq: offset });
      t.offset = offset;
    }
  }
  return t;
}

const acks = (epoch: string, from: number, to: number, at = 0): Ack[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    seq: from + i,
    offset: from + i,
    epoch,
    ackedAt: at + i,
  }));

/** A `recovered: true` position a socket was told after its first frame (`at`), as the fleet records it. */
const recoveredAt = (
  session: number,
  at: number,
  epoch: string,
  offset: number,
  missed: number,
  since?: { epoch: string; offset: number },
): ChannelTrack['entries'][number] => ({
  kind: 'position',
  session,
  at,
  epoch,
  offset,
  recovered: true,
  missed,
  since,
});

const check = (t: ChannelTrack, list: Ack[], end?: { epoch: string; offset: number }): string[] => {
  const stats: DeliveryStats = {
    publications: 0,
    resumes: 0,
    recovered: 0,
    unrecovered: 0,
    gapNotices: 0,
    caughtUp: 0,
    covered: 0,
  };
  return deliveryProblems(t, list, epochRanking(list, [t]), end, stats);
};

describe('the delivery check', () => {
  it("passes a channel's first epoch after an empty one, mid-subscription and on a resume, and nothing else", () => {
    const empty = `_e${'0123456789ab'}${String(Date.now()).padStart(13, '0')}`;
    const t = track(['P', empty, 0]);
    // Mid-subscription (the same socket): the channel's first epoch at offset 0, nothing lost.
    t.entries.push(recoveredAt(1, 2, 'E1', 0, 0));
    t.entries.push({ kind: 'publication', session: 1, at: 3, epoch: 'E1', offset: 1, seq: 1 });
    expect(check(t, acks('E1', 1, 1, 10), { epoch: 'E1', offset: 1 })).toEqual([]);
    // A resume from the empty epoch into the epoch that follows it, with what it missed.
    const resumed = track(['P', empty, 0]);
    resumed.entries.push(recoveredAt(2, 2, 'E1', 2, 2, { epoch: empty, offset: 0 }));
    resumed.entries.push({ kind: 'publication', session: 2, at: 3, epoch: 'E1', offset: 1, seq: 1 });
    resumed.entries.push({ kind: 'publication', session: 2, at: 4, epoch: 'E1', offset: 2, seq: 2 });
    expect(check(resumed, acks('E1', 1, 2, 10), { epoch: 'E1', offset: 2 })).toEqual([]);
    // From a real epoch, either one is still a problem.
    const real = track(['P', 'E0', 3]);
    real.entries.push(recoveredAt(1, 2, 'E1', 0, 0));
    expect(check(real, [])).toContain(
      'a position in the middle of a subscription says recovered true (socket 1)',
    );
  });

  it('passes a subscription that got everything after its position, across a recovered resume', () => {
    const t = track(
      ['P', 'E1', 2],
      ['M', 3],
      ['M', 4],
      ['P', 'E1', 7, true, 4],
      ['M', 5],
      ['M', 6],
      ['M', 7],
      ['M', 8],
    );
    expect(check(t, acks('E1', 1, 8), { epoch: 'E1', offset: 8 })).toEqual([]);
  });

  it('finds a silently lost publication, a duplicate, and a resume from the wrong place', () => {
    expect(
      check(track(['P', 'E1', 0], ['M', 1], ['M', 3]), acks('E1', 1, 3), { epoch: 'E1', offset: 3 }),
    ).toEqual(['out of sequence: 3 where 2 was next in E1 (socket 1)', 'silently lost in E1: 2']);
    expect(check(track(['P', 'E1', 0], ['M', 1], ['M', 1], ['M', 2]), acks('E1', 1, 2))[0]).toMatch(
      /received twice: E1:1/,
    );
    const wrongSince = track(['P', 'E1', 0], ['M', 1], ['M', 2], ['P', 'E1', 3, true, 1], ['M', 2], ['M', 3]);
    expect(check(wrongSince, acks('E1', 1, 3)).join()).toMatch(/resumed from E1:1 while at E1:2/);
  });

  it('accepts a gap that a recovered: false position covers, also across epochs, and only that gap', () => {
    const epochs = [...acks('E1', 1, 5, 0), ...acks('E2', 1, 3, 100)];
    const told = track(['P', 'E1', 0], ['M', 1], ['M', 2], ['P', 'E2', 2, false, 2], ['M', 3]);
    expect(check(told, epochs, { epoch: 'E2', offset: 3 })).toEqual([]);
    // The position covers 2-4 only: 6, skipped later, is lost without a word.
    const partly = track(['P', 'E1', 0], ['M', 1], ['P', 'E1', 4, false, 1], ['M', 5], ['M', 7]);
    expect(check(partly, acks('E1', 1, 7), { epoch: 'E1', offset: 7 })).toEqual([
      'out of sequence: 7 where 6 was next in E1 (socket 2)',
      'silently lost in E1: 6',
    ]);
  });

  it('writes offsets as ranges', () => {
    expect(ranges([9, 3, 4, 5, 11, 12])).toBe('3-5, 9, 11-12');
  });
});
