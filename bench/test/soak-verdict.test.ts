import { expectedView } from '../src/soak/soak';
import { countsDrift, heapRule, heapVerdict, soakVerdict } from '../src/soak/verdict';
import type { CountsView, HeapVerdict } from '../src/soak/verdict';

// The soak run is closed on these verdicts: they are pinned here on measurements given as data.

const MiB = 2 ** 20;

/** A heap sampled every 10 s: a sawtooth climbing 12 MiB over 30 s from `floor(t)`, then collected. */
const sawtooth = (durationS: number, floor: (t: number) => number): { t: number; heapUsedBytes: number }[] =>
  Array.from({ length: durationS / 10 }, (_, i) => {
    const t = (i + 1) * 10;
    return { t, heapUsedBytes: floor(t) + ((t % 30) / 30) * 12 * MiB };
  });

describe('soak: the heap verdict', () => {
  const rule = heapRule(600);

  it('splits a 10-minute run into a 2-minute warm-up, 2-minute windows and 1-minute buckets', () => {
    expect(rule).toEqual({ warmupS: 120, windowS: 120, bucketS: 60, maxGrowth: 0.1 });
  });

  it('passes a heap whose floor stays level, however high its sawtooth peaks', () => {
    const verdict = heapVerdict(
      sawtooth(600, () => 40 * MiB),
      600,
      rule,
    );
    expect(verdict).toMatchObject({ ok: true, baselineBytes: 40 * MiB, finalBytes: 40 * MiB, growth: 0 });
    expect(verdict.floors.map((f) => f.t)).toEqual([120, 180, 240, 300, 360, 420, 480, 540, 600]);
  });

  it('ignores the warm-up, where the heap is still filling', () => {
    const verdict = heapVerdict(
      sawtooth(600, (t) => (t < 120 ? 10 * MiB : 40 * MiB)),
      600,
      rule,
    );
    expect(verdict.ok).toBe(true);
  });

  it('fails a floor that climbs more than 10 % from the baseline window to the final window', () => {
    // 40 MiB growing 1 MiB a minute after warm-up: about +15 % between the windows' medians.
    const verdict = heapVerdict(
      sawtooth(600, (t) => 40 * MiB + Math.max(0, t - 120) * (MiB / 60)),
      600,
      rule,
    );
    expect(verdict.ok).toBe(false);
    expect(verdict.growth).toBeGreaterThan(0.1);
    expect(verdict.why).toMatch(/^heap after collections grew 1\d\.\d % \(more than 10 %\)$/);
  });

  it('passes growth within the limit', () => {
    const verdict = heapVerdict(
      sawtooth(600, (t) => 40 * MiB + Math.max(0, t - 120) * (MiB / 600)),
      600,
      rule,
    );
    expect(verdict.ok).toBe(true);
    expect(verdict.growth).toBeGreaterThan(0);
    expect(verdict.growth).toBeLessThan(0.1);
  });

  it('is not moved by one high reading in the final window', () => {
    const samples = sawtooth(600, () => 40 * MiB).map((s) =>
      s.t === 590 ? { ...s, heapUsedBytes: 400 * MiB } : s,
    );
    expect(heapVerdict(samples, 600, rule).ok).toBe(true);
  });

  it('finds the floor when full collections are further apart than a bucket', () => {
    // A collection every 90 s: some minutes never see the floor, each 2-minute window does.
    const samples = Array.from({ length: 60 }, (_, i) => {
      const t = (i + 1) * 10;
      return { t, heapUsedBytes: 40 * MiB + ((t % 90) / 90) * 20 * MiB };
    });
    const verdict = heapVerdict(samples, 600, rule);
    expect(verdict).toMatchObject({ ok: true, baselineBytes: 40 * MiB, finalBytes: 40 * MiB });
  });

  describe('with the gauge of the heap after full collections', () => {
    /** Used heap as a sawtooth, the gauge stepping to `kept(t)` at each full collection (every 60 s). */
    const withGauge = (
      kept: (t: number) => number,
    ): { t: number; heapUsedBytes: number; heapAfterGcBytes: number }[] =>
      sawtooth(600, kept).map((s) => ({ ...s, heapAfterGcBytes: kept(Math.floor(s.t / 60) * 60) }));

    it('judges the median of the gauge, not used heap', () => {
      const verdict = heapVerdict(
        withGauge(() => 30 * MiB).map((s) => ({ ...s, heapUsedBytes: s.heapUsedBytes + s.t * 100_000 })),
        600,
        rule,
      );
      expect(verdict).toMatchObject({
        ok: true,
        basis: 'after-gc',
        baselineBytes: 30 * MiB,
        finalBytes: 30 * MiB,
      });
    });

    it('fails when what the collections leave climbs more than 10 %', () => {
      const verdict = heapVerdict(
        withGauge((t) => 30 * MiB + t * 10_000),
        600,
        rule,
      );
      expect(verdict).toMatchObject({ ok: false, basis: 'after-gc' });
      expect(verdict.growth).toBeGreaterThan(0.1);
    });

    it('is not moved by one unusual collection in a window', () => {
      const samples = withGauge(() => 30 * MiB).map((s) =>
        s.t === 560 ? { ...s, heapAfterGcBytes: 60 * MiB } : s,
      );
      expect(heapVerdict(samples, 600, rule)).toMatchObject({ ok: true, growth: 0 });
    });

    it('falls back to the lowest used heap when the gauge reads 0 (no collection yet, or an older product)', () => {
      const samples = withGauge(() => 30 * MiB).map((s) => ({ ...s, heapAfterGcBytes: s.t < 300 ? 0 : 1 }));
      expect(heapVerdict(samples, 600, rule)).toMatchObject({
        ok: true,
        basis: 'lowest-used',
        baselineBytes: 30 * MiB,
      });
    });
  });

  it('refuses to judge a run too short to have both windows', () => {
    const verdict = heapVerdict(
      sawtooth(60, () => 40 * MiB),
      60,
      rule,
    );
    expect(verdict.ok).toBe(false);
    expect(verdict.why).toMatch(/^too short to judge/);
  });
});

describe('soak: the counts the sockets imply', () => {
  it('counts every socket on its channel and node, V3 presence entries and V4 identities', () => {
    const view = expectedView(
      [
        { key: 'k', protocol: 'v3', channel: 'a', node: 0 },
        { key: 'k', protocol: 'v4', channel: 'a', node: 1 },
        { key: 'k', protocol: 'v3', channel: 'a', node: 0, user: 'u1' },
        { key: 'k', protocol: 'v3', channel: 'a', node: 1, user: 'u1' },
        { key: 'k', protocol: 'v4', channel: 'b', node: 0, user: 'u1' },
        { key: 'k', protocol: 'v4', channel: 'b', node: 1, user: 'u1' },
        { key: 'k', protocol: 'v4', channel: 'b', node: 1, user: 'u2' },
        { key: 'kick', protocol: 'v4', channel: 'a', node: 1 },
      ],
      2,
      ['k', 'kick', 'idle'],
    );
    expect(view).toEqual({
      sums: { k: 7, kick: 1, idle: 0 },
      channels: { 'k|a': 4, 'k|b': 3, 'kick|a': 1 },
      // Two tabs of u1 are two V3 entries but one V4 identity.
      presence: { 'k|v3|a': 2, 'k|v4|b': 2 },
      nodes: [3, 5],
    });
  });
});

describe('soak: drift', () => {
  const view = (over: Partial<CountsView> = {}): CountsView => ({
    sums: { k: 3 },
    channels: { 'k|a': 2, 'k|b': 1 },
    presence: { 'k|v4|a': 1 },
    nodes: [2, 1],
    ...over,
  });

  it('finds none when the cluster agrees, a missing entry counting as zero', () => {
    expect(countsDrift(view(), view())).toEqual([]);
    expect(countsDrift(view({ sums: { k: 3, idle: 0 } }), view())).toEqual([]);
  });

  it('names every count that differs: sums, channels, presence and node gauges', () => {
    const actual = view({
      sums: { k: 4 },
      channels: { 'k|a': 2, 'k|b': 1, 'k|stale': 1 },
      presence: {},
      nodes: [2, 2],
    });
    expect(countsDrift(view(), actual)).toEqual([
      'sum k: expected 3, reported 4',
      'channel k|stale: expected 0, reported 1',
      'presence k|v4|a: expected 1, reported 0',
      'node 2 switchboard_connections: expected 1, reported 2',
    ]);
  });
});

describe('soak: the verdict', () => {
  const heapOk: HeapVerdict = {
    ok: true,
    baselineBytes: 1,
    finalBytes: 1,
    growth: 0,
    basis: 'after-gc',
    floors: [],
  };
  const clean = {
    heap: [heapOk, heapOk],
    checkpoints: [{ t: 120, open: 10, settledMs: 40, drift: [] }],
    leftovers: [],
    unexpectedCloses: {},
    wrongKicks: 0,
    missedKicks: 0,
    failedOpens: 1,
    opens: 2000,
    maxFailedShare: 0.001,
  };

  it('passes a clean run (one failed open in 2,000 is tolerated)', () => {
    expect(soakVerdict(clean)).toEqual({ ok: true, reasons: [] });
  });

  it('fails on each kind of problem, saying which', () => {
    const verdict = soakVerdict({
      ...clean,
      heap: [heapOk, { ...heapOk, ok: false, why: 'heap after collections grew 12.0 % (more than 10 %)' }],
      checkpoints: [{ t: 240.4, open: 10, drift: ['sum k: expected 3, reported 4'] }],
      leftovers: ['bench:counts:{k}:total'],
      unexpectedCloses: { '1006': 2, '4008': 0 },
      wrongKicks: 1,
      missedKicks: 2,
      failedOpens: 3,
    });
    expect(verdict.ok).toBe(false);
    expect(verdict.reasons).toEqual([
      'node 2: heap after collections grew 12.0 % (more than 10 %)',
      'counts drifted at 240 s: sum k: expected 3, reported 4',
      'state left in Redis after every socket closed: bench:counts:{k}:total',
      'sockets closed by the server unasked: 2× 1006',
      '1 sockets kicked that no kick matched',
      '2 sockets a kick matched stayed open',
      '3 of 2000 opens failed',
    ]);
  });
});
