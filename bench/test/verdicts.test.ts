import { targets } from '../src/report';
import type { Results, ThroughputShape } from '../src/results';
import { lossReason } from '../src/scenarios/load';
import type { Step } from '../src/scenarios/load';
import { sustainedMax } from '../src/scenarios/throughput/run';
import type { ThroughputCase } from '../src/scenarios/throughput/run';

// The benchmark's verdicts are what issue 6 is closed on: these pin how a maximum is found and
// how a throughput target is judged, on measurements given as data.

const measured = (rate: number, pass: boolean, deliveries = rate * 1000): Step => ({
  rate,
  publishRate: rate,
  deliveriesPerSecond: deliveries,
  expected: deliveries,
  received: deliveries,
  loss: 0,
  publishFailed: 0,
  p50Ms: 10,
  p95Ms: 20,
  p99Ms: 30,
  maxMs: 40,
  earlyP50Ms: 10,
  lateP50Ms: 10,
  cpu: { servers: 0, redis: 0, clients: 0, publisher: 0, wallSeconds: 1 },
  serverCpuMsPer1000: 0,
  pass,
  ...(pass ? {} : { why: 'publisher reached less' }),
});

describe('bench: the sustained maximum', () => {
  it('is the search best when it holds for the full duration', async () => {
    const { max, tried } = await sustainedMax(
      async (rate) => measured(rate, true),
      3200,
      () => undefined,
    );
    expect(max).toMatchObject({ rate: 3200, pass: true });
    expect(tried.map((s) => s.rate)).toEqual([3200]);
  });

  it('steps down by eighths of the best until a rate holds, each failure measured twice', async () => {
    const asked: number[] = [];
    const capacity = 2500;
    const { max, tried } = await sustainedMax(
      async (rate) => {
        asked.push(rate);
        return measured(rate, rate <= capacity);
      },
      3200,
      () => undefined,
    );
    expect(max).toMatchObject({ rate: 2400, pass: true });
    expect(tried.map((s) => [s.rate, s.pass])).toEqual([
      [3200, false],
      [2800, false],
      [2400, true],
    ]);
    expect(asked).toEqual([3200, 3200, 2800, 2800, 2400]);
  });

  it('keeps a rate whose first full-duration measurement failed once', async () => {
    let calls = 0;
    const { max } = await sustainedMax(
      async (rate) => measured(rate, ++calls > 1),
      1600,
      () => undefined,
    );
    expect(max).toMatchObject({ rate: 1600, pass: true });
  });

  it('stops at half the best and reports the last attempt as failed when nothing holds', async () => {
    const { max, tried } = await sustainedMax(
      async (rate) => measured(rate, false),
      800,
      () => undefined,
    );
    expect(tried.map((s) => s.rate)).toEqual([800, 700, 600, 500, 400]);
    expect(max).toMatchObject({ rate: 400, pass: false });
  });
});

const run = (system: ThroughputCase['system'], parts: Partial<ThroughputCase>): ThroughputCase => ({
  system,
  nodes: 2,
  channels: 1,
  subscribersPerChannel: 1000,
  connect: { ok: 1000, failed: 0, openSeconds: 0.2, joinSeconds: 0, joined: 0 },
  search: [],
  ...parts,
});

/** Three back-to-back pairs: the ceiling's maxima, and whether Switchboard held 85% of each. */
function fanout(pairs: { ceiling: number; sbMax: number; held: boolean }[]): Results {
  const shape: ThroughputShape = {
    label: '1 channel × 1,000 subscribers',
    channels: 1,
    subscribersPerChannel: 1000,
    runs: {
      'ceiling-redis': pairs.map((p) => run('ceiling-redis', { max: measured(p.ceiling, true) })),
      'switchboard-redis': pairs.map((p) =>
        run('switchboard-redis', {
          max: measured(p.sbMax, true),
          atTarget: measured(Math.round(p.ceiling * 0.85), p.held),
        }),
      ),
    },
    median: {},
  };
  return { fanout: { meta: {} as never, shapes: [shape] } };
}

describe('bench: a throughput target', () => {
  const fanoutVerdict = (r: Results) => targets(r).find((t) => t.name.startsWith('Fan-out'))!;

  it('is met when Switchboard held the target share of its ceiling in most pairs', () => {
    const verdict = fanoutVerdict(
      fanout([
        { ceiling: 2800, sbMax: 2400, held: true },
        { ceiling: 2800, sbMax: 2800, held: false },
        { ceiling: 2400, sbMax: 2400, held: true },
      ]),
    );
    expect(verdict.met).toBe(true);
    expect(verdict.measured).toContain('in 2 of 3 back-to-back pairs');
  });

  it('is not met when it held in a minority, even with searched maxima at the ceiling', () => {
    const verdict = fanoutVerdict(
      fanout([
        { ceiling: 2800, sbMax: 2800, held: false },
        { ceiling: 2800, sbMax: 2800, held: false },
        { ceiling: 2800, sbMax: 2800, held: true },
      ]),
    );
    expect(verdict.met).toBe(false);
    expect(verdict.gap).toBe('held in 1 of 3 pairs (publisher reached less)');
  });

  it('is not decided by searched maxima alone', () => {
    const results = fanout([{ ceiling: 2800, sbMax: 2800, held: true }]);
    delete results.fanout!.shapes[0]!.runs['switchboard-redis']![0]!.atTarget;
    const verdict = fanoutVerdict(results);
    expect(verdict.met).toBeUndefined();
    expect(verdict.measured).toMatch(/^not checked at the target rate/);
  });
});

describe('bench: a step with loss', () => {
  it('says how many subscriber sockets the server closed, when any did', () => {
    expect(lossReason(0.00025, 1)).toBe('loss 0.025% (1 subscriber sockets were closed by the server)');
    expect(lossReason(0.00025, 0)).toBe('loss 0.025%');
  });
});
