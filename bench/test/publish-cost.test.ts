import { costVerdict } from '../src/scenarios/publish-cost';
import type { CostRun, CostVariant } from '../src/scenarios/publish-cost';
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

const run = (ceiling: [number, number], on: [number, number], loss = 0): CostRun => ({
  cases: (
    [
      ['ceiling', ceiling, 0],
      ['history-on', on, loss],
    ] as [CostVariant, [number, number], number][]
  ).map(([variant, [cpu, p99], l]) => ({
    variant,
    system: variant === 'ceiling' ? 'ceiling-redis' : 'switchboard-redis',
    connected: 4000,
    step: measured(cpu, p99, l),
  })),
});

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
