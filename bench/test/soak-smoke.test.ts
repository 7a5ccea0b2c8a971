import { DEFAULT_SOAK, runSoak } from '../src/soak/soak';

// A tiny soak (built gateways and a redis-server, as `npm run soak` runs them): the harness's
// own bookkeeping must agree with a healthy cluster, or a real run's drift verdict means nothing.
// The heap verdict needs minutes of data and is pinned on data in soak-verdict.test.ts.
describe('bench: a tiny soak run', () => {
  it('churns, publishes and kicks with every checkpoint agreeing and nothing left behind', async () => {
    const lines: string[] = [];
    const result = await runSoak({
      ...DEFAULT_SOAK,
      durationS: 10,
      connections: 300,
      kickKeyConnections: 30,
      churn: 30,
      publishRate: 30,
      channels: 20,
      keyKickEveryS: 3,
      userKickEveryS: 2,
      kickCheckMs: 2000,
      sampleS: 1,
      checkpointS: 4,
      rampRate: 300,
      log: (line) => lines.push(line),
    });
    expect(result.checkpoints.length).toBeGreaterThanOrEqual(3);
    for (const c of result.checkpoints) expect(c).toMatchObject({ drift: [] });
    expect(result.checkpoints[result.checkpoints.length - 2]!.open).toBeGreaterThan(200);
    expect(result.checkpoints[result.checkpoints.length - 1]!.open).toBe(0);
    expect(result.leftovers).toEqual([]);
    expect(result.unexpectedCloses).toEqual({});
    expect(result.kicks).toMatchObject({ wrong: 0, missed: 0 });
    expect(result.kicks.keyKicks).toBeGreaterThan(0);
    expect(result.kicks.kickedSockets).toBeGreaterThan(0);
    expect(result.counters.closedByClient).toBeGreaterThan(0);
    expect(result.publishes.failed).toBe(0);
    for (const node of result.nodes) {
      expect(node.samples.length).toBeGreaterThanOrEqual(5);
      for (const s of node.samples) {
        expect(s.heapUsedBytes).toBeGreaterThan(0);
        expect(s.rssBytes).toBeGreaterThan(s.heapUsedBytes);
        expect(s.lagP99Ms).toBeGreaterThan(0);
      }
    }
  }, 90_000);
});
