import { freshSeed } from '../../chaos/src/random';
import { runChaos } from '../../chaos/src/run';

/**
 * The chaos run of docs/reliability.md in 45 seconds, with a fresh seed each time (printed first:
 * `npm run chaos -- --seed N --duration 45` replays the same schedule). Redis, three gateways
 * behind HAProxy, the account API, 26 to 46 @switchboard/client clients with recovery (some with
 * presence), a publisher at about 30 publishes a second, and a seeded schedule of gateway
 * SIGKILLs and SIGTERMs, Redis restarts and client churn; then every check of the run must pass.
 *
 * Needs `haproxy` and `redis-server` (.ci/run installs them). `CHAOS_SEED` replays a given seed here.
 */
const DURATION_MS = 45_000;
jest.setTimeout(DURATION_MS + 150_000);

it('survives 45 seconds of seeded chaos: counts, members and Redis converge, nothing crashed, nothing silently lost', async () => {
  const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : freshSeed();
  const lines: string[] = [];
  const result = await runChaos({
    seed,
    durationMs: DURATION_MS,
    log: (line) => {
      lines.push(line);
      process.stdout.write(`${line}\n`);
    },
  });
  const failed = result.checks.filter((check) => check.problems.length > 0);
  // The whole transcript on failure: the seed and what happened when are in it.
  expect(failed.length === 0 ? [] : lines).toEqual([]);
  // The schedule did what it is for: every kind of fault happened.
  expect(result.executed['kill-gateway'] + result.executed['term-gateway']).toBeGreaterThan(0);
  expect(result.executed['restart-redis']).toBeGreaterThan(0);
  expect(result.executed.churn).toBeGreaterThan(0);
});
