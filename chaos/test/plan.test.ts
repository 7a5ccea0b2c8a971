import { FAILOVER_ALLOWANCE_MS, GATEWAYS, planChaos } from '../src/plan';
import type { ChaosEvent } from '../src/plan';
import { Random } from '../src/random';

const timing = { drainGraceMs: 2000, restartAllowanceMs: 5000 };

/** When a fault's target is back, as the plan allows for it. */
function end(event: ChaosEvent): number {
  switch (event.kind) {
    case 'kill-gateway':
      return event.at + event.downMs + timing.restartAllowanceMs;
    case 'term-gateway':
      return event.at + timing.drainGraceMs + event.downMs + timing.restartAllowanceMs;
    case 'restart-redis':
      return event.at + event.downMs + timing.restartAllowanceMs;
    case 'failover-redis':
      return event.at + FAILOVER_ALLOWANCE_MS;
    case 'churn':
      return event.at;
  }
}

describe('the chaos plan', () => {
  it('of a failover run draws failovers, one at a time, where a plain run draws Redis restarts', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const plain = planChaos(seed, 60_000, timing);
      const failover = planChaos(seed, 60_000, timing, { failover: true });
      const kinds = new Set(failover.events.map((event) => event.kind));
      expect(kinds.has('restart-redis')).toBe(false);
      expect(kinds.has('failover-redis')).toBe(true);
      expect(failover.initialClients).toEqual(plain.initialClients);
      const failovers = failover.events.filter((event) => event.kind === 'failover-redis');
      for (const [i, event] of failovers.entries()) {
        expect(end(event)).toBeLessThanOrEqual(60_000);
        if (i > 0) expect(event.at).toBeGreaterThanOrEqual(end(failovers[i - 1]!));
      }
    }
  });

  it('is a function of the seed: the same seed replays the same schedule, another seed gives another', () => {
    expect(planChaos(1234, 180_000, timing)).toEqual(planChaos(1234, 180_000, timing));
    expect(planChaos(1235, 180_000, timing).events).not.toEqual(planChaos(1234, 180_000, timing).events);
    expect(new Random(7).next()).toBe(new Random(7).next());
  });

  it('has every kind of fault in 45 seconds, keeps a gateway up, never overlaps Redis restarts, and ends its faults in time', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const plan = planChaos(seed, 45_000, timing);
      const kinds = new Set(plan.events.map((event) => event.kind));
      expect([seed, [...kinds].sort()]).toEqual([
        seed,
        ['churn', 'kill-gateway', 'restart-redis', 'term-gateway'],
      ]);
      const faults = plan.events.filter((event) => event.kind !== 'churn');
      for (const event of plan.events) {
        expect(end(event)).toBeLessThanOrEqual(45_000);
        const busy = faults.filter(
          (other) => other.kind !== 'restart-redis' && other.at <= event.at && end(other) > event.at,
        );
        expect(busy.length).toBeLessThan(GATEWAYS.length);
        if (event.kind === 'restart-redis')
          expect(
            faults.filter(
              (o) => o.kind === 'restart-redis' && o !== event && o.at <= event.at && end(o) > event.at,
            ),
          ).toEqual([]);
      }
      const open = new Set(plan.initialClients.map((client) => client.name));
      for (const event of plan.events) {
        if (event.kind !== 'churn') continue;
        for (const name of event.close) expect(open.delete(name)).toBe(true);
        for (const client of event.open) open.add(client.name);
        expect(open.size).toBeGreaterThanOrEqual(26);
        expect(open.size).toBeLessThanOrEqual(46);
      }
    }
  });

  it('gives V3 clients one channel and presence channels presence', () => {
    const plan = planChaos(99, 180_000, timing);
    const clients = [
      ...plan.initialClients,
      ...plan.events.flatMap((e) => (e.kind === 'churn' ? e.open : [])),
    ];
    expect(clients.some((c) => c.protocol === 3)).toBe(true);
    expect(clients.some((c) => c.user !== undefined)).toBe(true);
    for (const client of clients) {
      if (client.protocol === 3) expect(client.subscriptions).toHaveLength(1);
      for (const sub of client.subscriptions)
        if (sub.channel.startsWith('presence-')) expect(sub.presence).toBe(true);
    }
  });
});
