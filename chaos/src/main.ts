import { freshSeed } from './random';
import { runChaos } from './run';
import { runMain } from '@switchboard/harness';

/**
 * `npm run chaos [-- --seed N] [--duration SECONDS] [--failover] [--cluster]`: one chaos run
 * (docs/reliability.md), three minutes by default with a fresh seed; `--failover` adds failovers
 * to the schedule (Redis behind Sentinel); `--cluster` runs on a Redis Cluster of three masters
 * with one replica each (with `--failover`, a master is killed and its replica promoted). Exits 0
 * when every check passed, 1 otherwise.
 */

interface Args {
  seed: number;
  durationMs: number;
  failover: boolean;
  redisCluster: boolean;
}

const USAGE =
  'usage: npm run chaos -- [--seed N] [--duration SECONDS (default 180)] [--failover] [--cluster]';

function parseArgs(argv: readonly string[]): Args {
  let seed: number | undefined;
  let failover = false;
  let redisCluster = false;
  let seconds = 180;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=') ? arg.split('=', 2) : [arg, undefined];
    const value = (): string => {
      const text = inline ?? argv[++i];
      if (text === undefined) throw new Error(`${name} needs a value`);
      return text;
    };
    if (name === '--seed') seed = Number(value());
    else if (name === '--duration') seconds = Number(value());
    else if (name === '--failover') failover = true;
    else if (name === '--cluster') redisCluster = true;
    else if (name === '--help' || name === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else
      throw new Error(
        `unknown argument ${arg} (expected --seed N, --duration SECONDS, --failover, --cluster)`,
      );
  }
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 32 - 1))
    throw new Error('--seed must be an integer from 0 to 4294967295');
  if (!Number.isFinite(seconds) || seconds < 10) throw new Error('--duration must be at least 10 (seconds)');
  return { seed: seed ?? freshSeed(), durationMs: Math.round(seconds * 1000), failover, redisCluster };
}

async function main(): Promise<void> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const result = await runChaos(args);
  process.exitCode = result.ok ? 0 : 1;
}

runMain('chaos', main, 1);
