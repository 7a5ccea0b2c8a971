import { memoryTargets } from '../src/scenarios/memory/report';
import { pusherTargets } from '../src/scenarios/pusher/report';
import type { MemoryCase } from '../src/scenarios/memory/run';
import type { Results } from '../src/results';

// Idle-memory verdicts are judged on the slope (what one more socket costs), the figure from the
// baseline shown beside it; results from before the slope are judged on what they have.

function memoryCase(perConnectionKiB: number, slopeKiB?: number): MemoryCase {
  return {
    system: 'switchboard-pusher',
    protocol: 'v3',
    connections: 10_000,
    ok: 10_000,
    rssBeforeKiB: 90 * 1024,
    rssAfterKiB: 90 * 1024 + perConnectionKiB * 10_000,
    perConnectionKiB,
    ...(slopeKiB === undefined
      ? {}
      : {
          slope: {
            low: 5_000,
            high: 15_000,
            rssLowKiB: 100 * 1024,
            rssHighKiB: 100 * 1024 + slopeKiB * 10_000,
            perConnectionKiB: slopeKiB,
          },
        }),
  };
}

const memoryLine = (c: MemoryCase): string | undefined =>
  pusherTargets({ shapes: [], publishBatch: 10, memory: [c] }).find((l) => l.includes('Idle memory'));

describe('idle-memory verdicts', () => {
  it('judges the Pusher row on the slope and shows the figure from the baseline beside it', () => {
    expect(memoryLine(memoryCase(2.13, 1.46))).toBe(
      '- Idle memory ≤ 2 KiB per connection — 1.46 KiB ✓ (slope; 2.13 KiB from the baseline).',
    );
    expect(memoryLine(memoryCase(1.9, 2.2))).toContain('2.20 KiB ✗');
  });

  it('judges results from before the slope on the figure from the baseline', () => {
    expect(memoryLine(memoryCase(2.13))).toBe('- Idle memory ≤ 2 KiB per connection — 2.13 KiB ✗.');
  });

  it('names the Pusher row and judges the memory scenario on the slope too', () => {
    const r = { memory: { meta: {}, cases: [memoryCase(3.4, 1.5)] } } as unknown as Results;
    const [target] = memoryTargets(r);
    expect(target?.name).toBe('Idle memory, Redis engine, Pusher');
    expect(target?.met).toBe(true);
    expect(target?.measured).toBe(
      '1.50 KiB per connection from 5,000 to 15,000 connections (3.40 from the baseline at 10,000)',
    );
  });
});
