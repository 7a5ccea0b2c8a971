import { targets } from '../src/report';
import { SCALE_TARGETS, scaleLayout, serverSlack } from '../src/scenarios/scale/run';
import type { ScalePublish, ScaleResult, ScaleSystem } from '../src/scenarios/scale/run';
import { reachableFdLimit } from '../src/lib/procs';

// Issue 16's targets, judged on measurements given as data, and the layout the scenario picks
// from the open files a process can get here.

const publish = (p99Ms: number, seen = 100_000): ScalePublish => ({
  open: 100_000,
  seen,
  dropped: 0,
  answeredMs: 5,
  p50Ms: p99Ms / 2,
  p99Ms,
  maxMs: p99Ms + 1,
  status: 200,
  cpu: { servers: 0.5, redis: 0, clients: 0.5 },
  serverCpuUsPerDelivery: 5,
});

const system = (
  name: ScaleSystem['system'],
  rssKiB: number,
  p99s: number[],
  errors: string[] = [],
): ScaleSystem => {
  const publishes = p99s.map((p) => publish(p));
  return {
    system: name,
    nodes: 2,
    connections: 100_000,
    serverFdLimit: 52_000,
    connect: {
      ok: 100_000,
      failed: 0,
      seconds: 20,
      perSecond: 5000,
      cpu: { servers: 5, redis: 0, clients: 3 },
    },
    rss: [],
    rssKiBPerConnection: rssKiB,
    publishes,
    publish: [...publishes].sort((a, b) => a.p99Ms - b.p99Ms)[Math.floor((publishes.length - 1) / 2)]!,
    errors,
  };
};

const results = (sb: ScaleSystem): ScaleResult => ({
  connections: 100_000,
  requestedNodes: 2,
  nodes: 2,
  clients: 6,
  sourcesPerClient: 64,
  reachableFdLimit: 1_048_576,
  members: 10_000,
  systems: [system('ceiling-redis', 0.5, [100, 120, 110]), sb],
});

const scaleTargets = (sb: ScaleSystem): { name: string; met: boolean | undefined }[] =>
  targets({ scale: { meta: undefined as never, result: results(sb) } }).filter((t) =>
    t.name.startsWith('Scale'),
  );

describe('bench: the scale targets', () => {
  it('are met at ≤ 2 KiB per connection, a median publish p99 under 300 ms and no error', () => {
    const verdicts = scaleTargets(system('switchboard-redis', 1.9, [250, 400, 280]));
    expect(verdicts.map((t) => t.met)).toEqual([true, true, true]);
  });

  it('are not met above 2 KiB, at a p99 of 300 ms, or with any error', () => {
    const verdicts = scaleTargets(
      system(
        'switchboard-redis',
        SCALE_TARGETS.rssKiBPerConnection + 0.01,
        [300, 300, 300],
        ['1 sockets closed'],
      ),
    );
    expect(verdicts.map((t) => t.met)).toEqual([false, false, false]);
  });

  it('count a publish that missed a socket as not delivered, whatever its p99', () => {
    const sb = system('switchboard-redis', 1, [10]);
    sb.publish = publish(10, 99_999);
    expect(scaleTargets(sb)[1]!.met).toBe(false);
  });
});

describe('bench: the scale layout', () => {
  it('gives each server the open files of its share, on more servers when one process cannot get them', () => {
    const reachable = reachableFdLimit(1_048_576);
    const layout = scaleLayout({ connections: 100_000, nodes: 2 });
    expect(layout.reachable).toBe(reachable);
    expect(layout.fdLimit).toBeLessThanOrEqual(reachable);
    const slack = serverSlack(reachable);
    expect(layout.nodes * (layout.fdLimit - slack)).toBeGreaterThanOrEqual(100_000);
    expect(layout.nodes).toBe(reachable >= 50_000 + slack ? 2 : Math.ceil(100_000 / (reachable - slack)));
    expect(layout.clients * Math.min(20_000, reachable - 256)).toBeGreaterThanOrEqual(100_000);
  });
});
