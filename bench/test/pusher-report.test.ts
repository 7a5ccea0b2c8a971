import { pusherTargets } from '../src/scenarios/pusher/report';
import type { Step } from '../src/scenarios/load';
import type { PusherCase, PusherResults } from '../src/scenarios/pusher/run';

// Issue 32's verdicts in the Pusher section: each Switchboard round against the ceiling and Soketi
// of the same round; while Switchboard has no figures, what it would need and why it has none.

const step = (deliveriesPerSecond: number): Step =>
  ({ rate: 1, deliveriesPerSecond, pass: true }) as unknown as Step;

function pusherCase(system: PusherCase['system'], deliveries?: number, error?: string): PusherCase {
  return {
    system,
    nodes: 2,
    channels: 1,
    subscribersPerChannel: 1000,
    connect: { ok: 0, failed: 0, openSeconds: 0, joinSeconds: 0, joined: 0 },
    search: [],
    ...(deliveries === undefined ? {} : { max: step(deliveries) }),
    ...(error ? { error } : {}),
    loadBefore: [1, 1, 1],
    loadAfter: [1, 1, 1],
  };
}

function results(switchboard: (number | undefined)[], error?: string): PusherResults {
  return {
    shapes: [
      {
        kind: 'fanout',
        label: '1 channel × 1,000 subscribers',
        channels: 1,
        subscribersPerChannel: 1000,
        runs: {
          'ceiling-redis': [pusherCase('ceiling-redis', 800_000), pusherCase('ceiling-redis', 400_000)],
          soketi: [pusherCase('soketi', 100_000), pusherCase('soketi', 50_000)],
          'switchboard-pusher': switchboard.map((d) => pusherCase('switchboard-pusher', d, error)),
        },
        median: {},
      },
    ],
  };
}

describe('bench report: Pusher targets', () => {
  it('judges each round against the same round, and takes the median round', () => {
    // Round 1: 87.5% of the ceiling, 7× Soketi; round 2: 90%, 7.2×.
    const met = pusherTargets(results([700_000, 360_000])).join('\n');
    expect(met).toContain(
      "(median of 2 rounds): ≥ 85% of the ceiling's deliveries/s — 88% ✓; ≥ 5× Soketi's — 7.0× ✓",
    );
    // 700,000 against round 2's ceiling would look better, but rounds are not mixed: 75% ✗.
    const unmet = pusherTargets(results([600_000, 300_000])).join('\n');
    expect(unmet).toContain('75% ✗');
  });

  it('says why Switchboard has no figures and what it would need on the best runs', () => {
    const text = pusherTargets(
      results(
        [undefined],
        'Error: no Pusher client could subscribe: x: handshake refused: HTTP/1.1 404 Not Found',
      ),
    ).join('\n');
    expect(text).toContain(
      "Switchboard not measured (the server refused the Pusher handshake: HTTP/1.1 404 Not Found). On the best runs here it would need ≥ 680,000 deliveries/s (85% of the ceiling's 800,000) and ≥ 500,000 (5× Soketi's 100,000).",
    );
    expect(text).toContain("Presence join CPU ≤ 1.2× a V3 presence join's — not measured.");
  });

  it('shows the history floor of each round beside the ceiling, when it was measured', () => {
    const r = results([600_000, 300_000]);
    r.shapes[0]!.runs['ceiling-redis-script'] = [
      pusherCase('ceiling-redis-script', 640_000),
      pusherCase('ceiling-redis-script', 320_000),
    ];
    // Round 1: the floor at 80% of the ceiling, Switchboard at 93.75% of the floor; round 2 the same.
    expect(pusherTargets(r).join('\n')).toContain(
      'The history floor reached 80% of the ceiling, Switchboard 94% of the floor.',
    );
  });
});
