// The publish-cost scenario's section of docs/benchmarks.md and its row of the verdict table.
import { cpu, int, lossText, ms, ratio } from '../../lib/format';
import { SCRIPT_CALLS } from '../../lib/redis-info';
import type { Results, Target } from '../../results';
import { COST_TARGET, costRatios, costVerdict } from './run';
import type { CostCase, CostVariant } from './run';

export const caseOf = (run: { cases: CostCase[] }, variant: CostVariant): CostCase | undefined =>
  run.cases.find((c) => c.variant === variant);

/** The pair (or, in older results, the run) whose CPU ratio of `variant` is the median one. */
export function medianCostPair(
  runs: { cases: CostCase[] }[],
  variant: CostVariant,
): { cases: CostCase[] } | undefined {
  const rated = runs
    .map((run) => ({ run, q: costRatios(run, variant)?.cpu }))
    .filter((x): x is { run: { cases: CostCase[] }; q: number } => x.q !== undefined)
    .sort((a, b) => a.q - b.q);
  return rated[Math.floor((rated.length - 1) / 2)]?.run ?? runs.find((run) => caseOf(run, variant));
}

const COST_LABEL: Record<CostVariant, string> = {
  ceiling: 'Ceiling: raw uWS + Redis hop (`PUBLISH`), 2 processes',
  'script-floor': "Ceiling server running Switchboard's publish script instead of `PUBLISH`",
  'history-on': 'Switchboard, history on (default, `HISTORY_SIZE=100`)',
  'history-off': 'Switchboard, history off (`HISTORY_SIZE=0`)',
  'history-on-opted-in': 'Switchboard, history on, every subscriber opted in (`recover=1`)',
};

function measuredHow(cost: NonNullable<Results['publish-cost']>): string {
  const warmup = `a warm-up of ${cost.warmupSeconds ?? 3} s at the same rate (long enough for every system to settle: a gateway that starts the load needs about 20 s at this rate before its CPU per delivery stops falling, the ceiling's servers about 5; see \`--cost-warmup\`)`;
  if (cost.rounds === undefined)
    return `Each run measures every row for ${cost.seconds} s after ${warmup}, one after the other, the ceiling first; the table shows the run with the median CPU ratio, the ratios of every run below it.`;
  const on = costVerdict(cost.runs).ratios.map((q) => q.cpu);
  const spread =
    on.length > 1
      ? ` (here history on's ranged from ${Math.min(...on).toFixed(2)}× to ${Math.max(...on).toFixed(2)}×)`
      : '';
  return `The ceiling stays up throughout; every other row's system is started in turn (each with its own Redis, subscribers and publisher), given ${warmup} together with the ceiling, then measured ${cost.rounds} times for ${cost.seconds} s at the same time as the ceiling, both under the same load over the same seconds (each after 1 s of it, not recorded), and stopped; so neither side of a pair comes to it from idling. On a shared virtual machine the same work's CPU time moves by a fifth or more within minutes and even seconds, so rows measured one after the other compare a system with the machine's mood (docs/performance.md, "What a REST publish costs at a low rate"); measured in pairs, both systems see the same machine, and a row's ratios stay close together${spread}. Each pair is judged against its own ceiling, the target on the median over pairs. Both systems share the machine's 2 cores while they are measured, which makes p99 noisier than CPU. Each row of the table is its median pair (by CPU ratio), with the ceiling measured in the same seconds; the ceiling's row is the one paired with history on. The ratios of every pair are listed below it.`;
}

export function costSection(r: Results): string[] {
  const cost = r['publish-cost'];
  if (!cost) return [];
  const variants = [...new Set(cost.runs.flatMap((run) => run.cases.map((c) => c.variant)))];
  const rows = variants.map((variant) => {
    const pair =
      variant === 'ceiling'
        ? (medianCostPair(cost.runs, 'history-on') ?? cost.runs.find((run) => caseOf(run, 'ceiling')))
        : medianCostPair(cost.runs, variant);
    return { variant, case: pair && caseOf(pair, variant), ceiling: pair && caseOf(pair, 'ceiling')?.step };
  });
  const lines = [
    '## Publish cost at a fixed rate',
    '',
    `${int(cost.channels)} channels × ${cost.subscribersPerChannel} subscribers (one per node), ${int(cost.rate)} publishes/s over REST (V3 \`POST /api/publish\`, round-robin over the channels and the 2 nodes): every publish costs a REST request, a key lookup, the engine's publish (the history script on Switchboard, one \`PUBLISH\` on the ceiling) and a log append, and is delivered to only 2 sockets, so CPU per delivery is the publish path's cost. CPU is the gateways' (or ceiling servers') and redis-server's utime + stime from \`/proc/<pid>/stat\` over the measurement and its settling. ${measuredHow(cost)} The second row is no target but a floor: the ceiling's server making Switchboard's publish script call instead of its \`PUBLISH\` (the same keys, arguments and log record; the offset answered; subscribers get the body after the script's header), with nothing else around it. Its ratio is what storing each publication in its topic's history and the message log costs with the least JavaScript possible; the distance between it and Switchboard's row is the gateway's own work (routing, validation, the key, metrics, per-node delivery bookkeeping).`,
    '',
    '| System | CPU per 1,000 deliveries (ms): total = gateways + Redis | × ceiling, of the ceiling measured with it (ms) | p50 / p95 / p99 (ms) | p99 × ceiling, of its p99 (ms) | delivered, loss | idle before the load: gateways + Redis CPU (ms per s) |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const c = row.case;
    const st = c?.step;
    if (!c || !st) {
      lines.push(`| ${COST_LABEL[row.variant]} | ⚠ ${c?.error?.slice(0, 120) ?? 'not measured'} | | | | | |`);
      continue;
    }
    const { ceiling } = row;
    const per = (seconds: number): string => (st.received ? ((seconds * 1e6) / st.received).toFixed(0) : '–');
    const isCeiling = c.variant === 'ceiling';
    const times = (a: number, b: number | undefined): string => `${ratio(a, b)?.toFixed(2) ?? '–'}×`;
    lines.push(
      `| ${COST_LABEL[c.variant]} | ${cpu(st)} = ${per(st.cpu.servers)} + ${per(st.cpu.redis)} | ${isCeiling ? '(ceiling)' : `${times(st.serverCpuMsPer1000, ceiling?.serverCpuMsPer1000)} of ${ceiling ? cpu(ceiling) : '–'}`} | ${ms(st.p50Ms)} / ${ms(st.p95Ms)} / ${ms(st.p99Ms)} | ${isCeiling ? '(ceiling)' : `${times(st.p99Ms, ceiling?.p99Ms)} of ${ceiling ? ms(ceiling.p99Ms) : '–'}`} | ${int(st.received)}, ${lossText(st)}${st.pass ? '' : ` (⚠ ${st.why ?? ''})`} | ${c.idle ? `${c.idle.servers.toFixed(1)} + ${c.idle.redis.toFixed(1)}` : '–'} |`,
    );
  }
  lines.push('');
  const timed = rows.map((row) => row.case).filter((c): c is CostCase => !!c?.redis && !!c.step?.publishRate);
  if (timed.length)
    lines.push(
      `Redis' own time per publish in each row's ${cost.rounds === undefined ? 'median run' : 'median pair'} (\`INFO commandstats\` over the measurement: µs inside each command, divided by the publishes; a script's time includes the commands it runs, listed after it; Redis' CPU above also counts reading, writing and its event loop):`,
      '',
      ...timed.map((c) => {
        const publishes = c.step!.expected / cost.subscribersPerChannel || 1;
        const entries = Object.entries(c.redis!).sort((a, b) => b[1].usec - a[1].usec);
        const scripts = entries.filter(([k]) => SCRIPT_CALLS.includes(k));
        const own = (scripts.length ? scripts : entries).reduce((sum, [, t]) => sum + t.usec, 0);
        return `- ${COST_LABEL[c.variant]}: ${(own / publishes).toFixed(1)} µs${scripts.length ? ' in scripts' : ''} (${entries.map(([k, t]) => `${k} ${(t.calls / publishes).toFixed(2)}× ${(t.usec / t.calls).toFixed(1)} µs`).join(', ')})`;
      }),
      '',
    );
  if (cost.runs.length > 1)
    lines.push(
      cost.rounds === undefined
        ? "Per run (CPU ratio / p99 ratio to the same run's ceiling):"
        : 'Per pair, in the order measured (CPU ratio / p99 ratio to the ceiling measured in the same seconds):',
      '',
      ...variants
        .filter((v) => v !== 'ceiling')
        .map(
          (v) =>
            `- ${COST_LABEL[v]}: ${cost.runs
              .filter((run) => caseOf(run, v))
              .map((run) => {
                const q = costRatios(run, v);
                return q ? `${q.cpu.toFixed(2)}× / ${q.p99.toFixed(2)}×` : '–';
              })
              .join(', ')}`,
        ),
      '',
    );
  return lines;
}

/** History on vs off, side by side, from the throughput scenarios. */

/** The publish-cost scenario's row of the verdict table. */
export function publishCostTargets(r: Results): Target[] {
  const out: Target[] = [];
  const cost = r['publish-cost'];
  if (cost) {
    const v = costVerdict(cost.runs);
    const floor = costVerdict(cost.runs, 'script-floor');
    const x = (q: number | undefined): string => (q === undefined ? '–' : `${q.toFixed(2)}×`);
    const mid = medianCostPair(cost.runs, 'history-on');
    const on = mid && caseOf(mid, 'history-on')?.step;
    const ceiling = mid && caseOf(mid, 'ceiling')?.step;
    out.push({
      name: `Publish cost, ${int(cost.channels)} channels × ${cost.subscribersPerChannel} subscribers at ${int(cost.rate)} publishes/s over REST, 2 nodes + Redis, history on`,
      goal: `server + Redis CPU per 1,000 deliveries and p99 each ≤ ${COST_TARGET}× the Redis-hop ceiling's`,
      measured:
        v.cpu === undefined
          ? 'no complete run'
          : `CPU ${x(v.cpu)}, p99 ${x(v.p99)} (median of ${v.ratios.length} ${cost.rounds === undefined ? 'back-to-back runs' : 'pairs with the ceiling'}: CPU ${v.ratios.map((q) => x(q.cpu)).join(', ')}; p99 ${v.ratios.map((q) => x(q.p99)).join(', ')})${on && ceiling ? `; median ${cost.rounds === undefined ? 'run' : 'pair'}: ${cpu(on)} vs ${cpu(ceiling)} ms, p99 ${ms(on.p99Ms)} vs ${ms(ceiling.p99Ms)} ms` : ''}${floor.cpu === undefined ? '' : `; the ceiling server making the same publish script call instead of \`PUBLISH\`: CPU ${x(floor.cpu)}, p99 ${x(floor.p99)}`}`,
      met: v.met,
      gap:
        v.met === false
          ? [
              (v.cpu ?? 0) > COST_TARGET ? `CPU ${x(v.cpu)}` : '',
              (v.p99 ?? 0) > COST_TARGET ? `p99 ${x(v.p99)}` : '',
            ]
              .filter(Boolean)
              .join(', ') + ` (target ${COST_TARGET}×)`
          : '–',
    });
  }
  return out;
}
