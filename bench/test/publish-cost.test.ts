import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resultsDir } from '../src/lib/results-dir';
import { targets, writeReport } from '../src/report';
import type { Meta, Results } from '../src/results';
import { costVerdict } from '../src/scenarios/publish-cost/run';
import type { CostRun, CostVariant } from '../src/scenarios/publish-cost/run';
import type { Step } from '../src/scenarios/load';

// Issue 12's publish-cost target is judged on these ratios: Switchboard's CPU per 1,000
// deliveries and p99 against the ceiling's measured over the same seconds, the median over pairs.

const measured = (cpuMs: number, p99Ms: number, loss = 0): Step => ({
  rate: 500,
  publishRate: 500,
  deliveriesPerSecond: 1000,
  expected: 10_000,
  received: Math.round(10_000 * (1 - loss)),
  loss,
  publishFailed: 0,
  p50Ms: 1,
  p95Ms: p99Ms / 2,
  p99Ms,
  maxMs: p99Ms * 2,
  earlyP50Ms: 1,
  lateP50Ms: 1,
  cpu: { servers: 0, redis: 0, clients: 0, publisher: 0, wallSeconds: 10 },
  serverCpuMsPer1000: cpuMs,
  pass: loss === 0,
});

/** A pair: the ceiling's case and `variant`'s, each [CPU ms per 1,000 deliveries, p99 ms]. */
const pairOf = (
  variant: CostVariant,
  ceiling: [number, number],
  own: [number, number],
  loss = 0,
): CostRun => ({
  cases: (
    [
      ['ceiling', ceiling, 0],
      [variant, own, loss],
    ] as [CostVariant, [number, number], number][]
  ).map(([v, [cpu, p99], l]) => ({
    variant: v,
    system: v === 'ceiling' ? 'ceiling-redis' : 'switchboard-redis',
    connected: 4000,
    step: measured(cpu, p99, l),
  })),
});

const run = (ceiling: [number, number], on: [number, number], loss = 0): CostRun =>
  pairOf('history-on', ceiling, on, loss);

describe('bench: the publish-cost target', () => {
  it('is met when the median CPU and p99 ratios are both at most 1.25×', () => {
    const v = costVerdict([run([100, 2], [120, 2.4]), run([100, 2], [130, 2]), run([100, 2], [110, 4])]);
    expect(v.cpu).toBeCloseTo(1.2);
    expect(v.p99).toBeCloseTo(1.2);
    expect(v.met).toBe(true);
  });

  it('is not met when either median is above', () => {
    const v = costVerdict([run([100, 2], [163, 2]), run([100, 2], [150, 2]), run([100, 2], [120, 2])]);
    expect(v.cpu).toBeCloseTo(1.5);
    expect(v.met).toBe(false);
  });

  it('leaves out runs with loss, and is undecided without a complete run', () => {
    const v = costVerdict([run([100, 2], [100, 2], 0.01), run([100, 2], [200, 2])]);
    expect(v.ratios).toHaveLength(1);
    expect(v.met).toBe(false);
    expect(costVerdict([run([100, 2], [100, 2], 0.01)]).met).toBeUndefined();
  });
});

describe('bench: the publish-cost report', () => {
  const costResults = (runs: CostRun[]): Results => ({
    'publish-cost': {
      meta: {
        command: 'npm run bench -- --scenario publish-cost',
        startedAt: '2026-11-26T20:00:00.000Z',
        finishedAt: '2026-11-26T20:05:00.000Z',
        seconds: 300,
        machine: {
          nproc: 2,
          cpuModel: 'test',
          memoryGiB: 24,
          node: 'v20',
          kernel: 'test',
          loadAverage: [0, 0, 0],
        },
        loadAverageAtEnd: [0, 0, 0],
        productCommit: 'test',
        productDir: '.',
        options: {} as Meta['options'],
      },
      channels: 2000,
      subscribersPerChannel: 2,
      rate: 500,
      seconds: 5,
      warmupSeconds: 20,
      rounds: 3,
      runs,
    },
  });
  const report = (results: Results): string => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-report-'));
    writeReport(results, join(dir, 'benchmarks.md'), join(dir, 'latest.svg'));
    return readFileSync(join(dir, 'benchmarks.md'), 'utf8');
  };

  it("judges the median pair, and shows each row's median pair beside the ceiling measured with it", () => {
    const results = costResults([
      pairOf('script-floor', [100, 2], [120, 2]),
      pairOf('script-floor', [200, 2], [260, 2]),
      pairOf('script-floor', [100, 2], [110, 2]),
      pairOf('history-on', [100, 2], [150, 2]),
      pairOf('history-on', [200, 2], [240, 2]),
      pairOf('history-on', [150, 2], [210, 2]),
    ]);
    const target = targets(results).find((t) => t.name.startsWith('Publish cost'));
    expect(target?.measured).toContain(
      'CPU 1.40×, p99 1.00× (median of 3 pairs with the ceiling: CPU 1.50×, 1.20×, 1.40×',
    );
    expect(target?.met).toBe(false);
    const md = report(results);
    expect(md).toContain(
      '| Switchboard, history on (default, `HISTORY_SIZE=100`) | 210.00 = 0 + 0 | 1.40× of 150.00 |',
    );
    expect(md).toContain(
      "| Ceiling server running Switchboard's publish script instead of `PUBLISH` | 120.00 = 0 + 0 | 1.20× of 100.00 |",
    );
    // The ceiling's row is the one paired with history on's median pair.
    expect(md).toContain(
      '| Ceiling: raw uWS + Redis hop (`PUBLISH`), 2 processes | 150.00 = 0 + 0 | (ceiling) |',
    );
  });

  it('shows the ceiling when it was measured alone', () => {
    const alone: CostRun = {
      cases: [{ variant: 'ceiling', system: 'ceiling-redis', connected: 4000, step: measured(100, 2) }],
    };
    expect(report(costResults([alone]))).toContain(
      '| Ceiling: raw uWS + Redis hop (`PUBLISH`), 2 processes | 100.00 = 0 + 0 | (ceiling) |',
    );
  });
});

describe('bench: where results are kept', () => {
  it('keeps the results of a trial (--quick, --no-docs) out of the published record', () => {
    expect(resultsDir('/repo', { quick: false, docs: true })).toBe('/repo/bench/results');
    expect(resultsDir('/repo', { quick: true, docs: true })).toBe('/repo/bench/results/tmp');
    expect(resultsDir('/repo', { quick: false, docs: false })).toBe('/repo/bench/results/tmp');
  });
});
