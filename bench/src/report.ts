import { writeFileSync } from 'node:fs';
import type { Meta, Results, Target, ThroughputShape } from './results';
import { LABEL, cpu, int, lossText, marks, ms, pct, ratio } from './lib/format';
import type { SystemName } from './lib/procs';
import type { Step } from './scenarios/load';
import { TARGET_SHARE } from './scenarios/throughput';
import type { ThroughputCase } from './scenarios/throughput';
import { connectCostSection, connectCostTargets } from './scenarios/connect-cost/report';
import { costSection, publishCostTargets } from './scenarios/publish-cost/report';
import { memorySection, memoryTargets } from './scenarios/memory/report';
import { presenceSection, presenceTargets } from './scenarios/presence/report';
import { profileSection } from './scenarios/profile/report';
import { recoverySection, recoveryTargets } from './scenarios/recovery/report';
import { scaleSection, scaleTargets } from './scenarios/scale/report';

const CEILING_OF: Partial<Record<SystemName, SystemName>> = {
  'switchboard-redis': 'ceiling-redis',
  'switchboard-redis-history-off': 'ceiling-redis',
  'switchboard-memory': 'ceiling-uws',
};
const COLOR: Record<SystemName, string> = {
  'switchboard-redis': '#2b6cb0',
  'switchboard-redis-history-off': '#4299e1',
  'switchboard-memory': '#63b3ed',
  'ceiling-redis': '#718096',
  'ceiling-uws': '#cbd5e0',
  'ceiling-redis-script': '#a0aec0',
};

/**
 * Fan-out and many channels with the servers on another Node.js (`--runtime`), beside the same
 * shapes of this record: each runtime's Switchboard against the ceiling on the same Node.js.
 */
function runtimesSection(r: Results): string[] {
  const runtimes = Object.entries(r.runtimes ?? {});
  if (runtimes.length === 0) return [];
  const out: string[] = [
    "## Newer Node.js beside the machine's",
    '',
    "The same shapes with the servers (Switchboard's 2 gateways, the ceiling's 2 processes) on another Node.js, run natively in a Debian 13 root (`npm run bench -- --runtime node24 --scenarios fanout,channels`, through `.ci/newer-runtimes.sh`; load generators and Redis stay on the machine). Each runtime's Switchboard is divided by the ceiling measured on the same Node.js in the same run. Rows of the machine's own Node.js are this page's fan-out and many-channels results (measured on the date given). A maximum found in one run (`--runs 1`) on a machine shared with other work moves a lot between runs, ratios included (see the load average at the start of each): compare CPU per delivery at the fixed rate first, and use `--runs 3` for figures to act on.",
    '',
    '| Shape | Node.js | measured (runs, load average at start) | ceiling max deliveries/s | Switchboard max deliveries/s | ratio to its ceiling | p99 at half max, ceiling / Switchboard (ms) | server CPU per 1,000 deliveries at the fixed rate, ceiling / Switchboard (ms) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const row = (
    label: string,
    node: string,
    meta: Meta | undefined,
    shape: ThroughputShape | undefined,
  ): string => {
    const c = shape?.median['ceiling-redis'];
    const sb = shape?.median['switchboard-redis'];
    const when = meta
      ? `${meta.startedAt.slice(0, 16).replace('T', ' ')} (${meta.options.runs}, ${meta.machine.loadAverage[0]?.toFixed(1) ?? '–'})`
      : '–';
    return `| ${label} | ${node} | ${when} | ${int(c?.max?.deliveriesPerSecond)} | ${int(sb?.max?.deliveriesPerSecond)} | ${pct(ratio(sb?.max?.deliveriesPerSecond, c?.max?.deliveriesPerSecond))} | ${ms(c?.half?.p99Ms)} / ${ms(sb?.half?.p99Ms)} | ${cpu(c?.fixed)} / ${cpu(sb?.fixed)} |`;
  };
  for (const kind of ['fanout', 'channels'] as const) {
    const own = r[kind];
    const labels = [
      ...new Set(runtimes.flatMap(([, record]) => record[kind]?.shapes.map((x) => x.label) ?? [])),
    ];
    for (const label of labels) {
      const mine = own?.shapes.find((candidate) => candidate.label === label);
      if (mine) out.push(row(label, `${own?.meta.machine.node ?? '–'} (this page)`, own?.meta, mine));
      for (const [runtime, record] of runtimes) {
        const shape = record[kind]?.shapes.find((candidate) => candidate.label === label);
        if (shape)
          out.push(
            row(label, `${record[kind]?.meta.serverNode ?? runtime}, Debian 13`, record[kind]?.meta, shape),
          );
      }
    }
  }
  out.push('');
  return out;
}

interface Pair {
  sb: Step;
  ceiling: Step;
  q: number;
}

/**
 * Switchboard's run i against the ceiling's run i (measured one after the other, so the machine's
 * drift between runs cancels out); with several runs the pair with the median ratio is judged.
 */
function medianPair(
  shape: ThroughputShape,
  pick: (c: ThroughputCase, role: 'sb' | 'ceiling') => Step | undefined,
  metric: (s: Step) => number,
): { pairs: number[]; mid?: Pair } {
  const ceilings = shape.runs['ceiling-redis'] ?? [];
  const pairs: Pair[] = [];
  (shape.runs['switchboard-redis'] ?? []).forEach((run, i) => {
    const sb = pick(run, 'sb');
    const ceilingRun = ceilings[i];
    const ceiling = ceilingRun && pick(ceilingRun, 'ceiling');
    const q = sb && ceiling ? ratio(metric(sb), metric(ceiling)) : undefined;
    if (sb && ceiling && q !== undefined) pairs.push({ sb, ceiling, q });
  });
  pairs.sort((x, y) => x.q - y.q);
  const mid = pairs[Math.floor((pairs.length - 1) / 2)];
  return { pairs: pairs.map((p) => p.q), ...(mid ? { mid } : {}) };
}

const pairsText = (pairs: number[], format: (q: number) => string): string =>
  pairs.length > 1 ? ` (median of ${pairs.length} back-to-back pairs: ${pairs.map(format).join(', ')})` : '';

/**
 * Judged on what Switchboard held: in each pair it is measured at the target share of the
 * ceiling's sustained maximum for the full duration; met when it held in most pairs. (The ratio
 * of the two searched maxima is shown too, but a search's steps are an eighth of a rate apart,
 * too coarse to decide a threshold.)
 */
function throughputTarget(shape: ThroughputShape, kind: string, goal: number): Target {
  const { pairs, mid } = medianPair(
    shape,
    (c) => c.max,
    (s) => s.deliveriesPerSecond,
  );
  const ceilings = shape.runs['ceiling-redis'] ?? [];
  const checks = (shape.runs['switchboard-redis'] ?? [])
    .map((run, i) => ({ at: run.atTarget, ceiling: ceilings[i]?.max }))
    .filter((x): x is { at: Step; ceiling: Step } => x.at !== undefined && x.ceiling !== undefined);
  const held = checks.filter((x) => x.at.pass).length;
  const maxima = `maxima ${int(mid?.sb.deliveriesPerSecond)}/s vs ${int(mid?.ceiling.deliveriesPerSecond)}/s = ${pct(mid?.q)}${pairsText(pairs, pct)}`;
  const met = checks.length ? held * 2 > checks.length : undefined;
  const rates = checks.map((x) => `${int(x.at.rate)}${x.at.pass ? '✓' : '✗'}`).join(', ');
  const why = checks.find((x) => !x.at.pass)?.at.why;
  return {
    name: `${kind}, ${shape.label}, 2 nodes + Redis`,
    goal: `≥ ${pct(goal)} of the Redis-hop ceiling, no loss`,
    measured: checks.length
      ? `${checks.length === 1 && held === 0 ? 'did not hold' : 'held'} ${pct(goal)} of the ceiling's sustained maximum for the full duration with no loss${checks.length > 1 ? ` in ${held} of ${checks.length} back-to-back pairs` : ''} (publishes/s: ${rates}); ${maxima}`
      : `not checked at the target rate; ${maxima}`,
    met,
    gap:
      met === undefined
        ? 'not measured'
        : met
          ? '–'
          : `held in ${held} of ${checks.length} pairs${why ? ` (${why})` : ''}`,
  };
}

/** A webhook-on run's rate: on one node with a core of its own when measured. */
export function targets(r: Results): Target[] {
  const out: Target[] = [];
  for (const shape of r.fanout?.shapes ?? [])
    out.push(throughputTarget(shape, 'Fan-out', TARGET_SHARE.fanout));
  for (const shape of r.channels?.shapes ?? [])
    out.push(throughputTarget(shape, 'Many channels', TARGET_SHARE.channels));
  out.push(...memoryTargets(r));
  out.push(...presenceTargets(r));
  out.push(...publishCostTargets(r));
  out.push(...connectCostTargets(r));
  out.push(...recoveryTargets(r));
  out.push(...scaleTargets(r));
  const first = r.fanout?.shapes[0];
  if (first) {
    // p99 over a short window is ruled by the longest stall in it (mostly the client processes,
    // which share the cores): with several runs, the median of the per-run ratios is judged.
    const { pairs, mid } = medianPair(
      first,
      (c, role) => (role === 'sb' ? c.sameRate : c.half),
      (s) => s.p99Ms,
    );
    const q = mid?.q;
    const met = q === undefined ? undefined : q <= 1.5;
    out.push({
      name: `Latency at half the max rate, ${first.label}`,
      goal: "p99 ≤ 1.5× the ceiling's p99 at the same rate (the ceiling's half maximum)",
      measured: `p99 ${ms(mid?.sb?.p99Ms)} ms vs ${ms(mid?.ceiling?.p99Ms)} ms at ${int(mid?.ceiling?.rate)} publishes/s = ${q === undefined ? '–' : q.toFixed(2)}×${pairsText(pairs, (x) => `${x.toFixed(2)}×`)}`,
      met,
      gap: met === false ? `${ms((mid?.sb?.p99Ms ?? 0) - 1.5 * (mid?.ceiling?.p99Ms ?? 0))} ms` : '–',
    });
  }
  return out;
}

function historySection(r: Results): string[] {
  const shapes = [...(r.fanout?.shapes ?? []), ...(r.channels?.shapes ?? [])].filter(
    (shape) => shape.median['switchboard-redis-history-off'],
  );
  if (shapes.length === 0) return [];
  const lines = [
    '## History on vs off',
    '',
    "The throughput cases above, Switchboard on 2 nodes + Redis with history on (the default, `HISTORY_SIZE=100`) and off (`HISTORY_SIZE=0`), each measured right after the same ceiling. Subscribers do not opt in (no `recover=1`): they get the frames they got before offsets existed. Off is not the publish path from before history: with size 0 the publish script still runs, counts the topic's offset (HGET, HINCRBY and EXPIRE of its meta hash) and publishes; it only stores nothing (no RPUSH, LTRIM or EXPIRE of the list, and a DEL of it). So on vs off is the price of storing history, not of offsets. The ratios here divide each system's median run by the ceiling's median run (the targets above use back-to-back pairs instead); under load they are noisy.",
    '',
    "| Shape | History | max deliveries/s (× ceiling) | target share of the ceiling held | p99 at the ceiling's half-max rate (× ceiling) | CPU per 1,000 deliveries at the fixed rate (ms, × ceiling) |",
    '|---|---|---|---|---|---|',
  ];
  for (const shape of shapes) {
    const ceiling = shape.median['ceiling-redis'];
    for (const [system, label] of [
      ['switchboard-redis', 'on'],
      ['switchboard-redis-history-off', 'off'],
    ] as const) {
      const runs = shape.runs[system] ?? [];
      const held = runs.filter((c) => c.atTarget?.pass).length;
      const checked = runs.filter((c) => c.atTarget).length;
      const c = shape.median[system];
      const q = (a: number | undefined, b: number | undefined, f: (n: number) => string): string => {
        const v = ratio(a, b);
        return v === undefined ? '' : ` (${f(v)})`;
      };
      lines.push(
        `| ${shape.label} | ${label} | ${int(c?.max?.deliveriesPerSecond)}${q(c?.max?.deliveriesPerSecond, ceiling?.max?.deliveriesPerSecond, pct)} | ${checked ? `${held} of ${checked} runs` : '–'} | ${ms(c?.sameRate?.p99Ms)}${q(c?.sameRate?.p99Ms, ceiling?.half?.p99Ms, (n) => `${n.toFixed(2)}×`)} | ${cpu(c?.fixed)}${q(c?.fixed?.serverCpuMsPer1000, ceiling?.fixed?.serverCpuMsPer1000, (n) => `${n.toFixed(2)}×`)} |`,
      );
    }
  }
  lines.push('');
  return lines;
}

function throughputTable(shapes: ThroughputShape[]): string[] {
  const lines: string[] = [];
  for (const shape of shapes) {
    lines.push(`### ${shape.label}`, '');
    lines.push(
      "| System | max publishes/s | max deliveries/s | ratio to its ceiling | loss at max | p50 / p95 / p99 at max (ms) | at half max: p50 / p95 / p99 (ms) | at the fixed rate: p50 / p99 (ms), loss | at its ceiling's half-max rate: p50 / p99 (ms) | server CPU per 1,000 deliveries at the fixed rate / at max (ms), Redis included | CPU efficiency vs its ceiling (fixed rate) |",
      '|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const [system, c] of Object.entries(shape.median) as [
      SystemName,
      (typeof shape.median)[SystemName],
    ][]) {
      if (!c) continue;
      const ceiling = CEILING_OF[system];
      const q = ceiling
        ? ratio(c.max?.deliveriesPerSecond, shape.median[ceiling]?.max?.deliveriesPerSecond)
        : undefined;
      lines.push(
        `| ${LABEL[system]} | ${int(c.max?.rate)} | ${int(c.max?.deliveriesPerSecond)}${c.max && !c.max.pass ? ` (⚠ the re-measure at this rate failed: ${c.max.why ?? ''})` : ''} | ${ceiling ? pct(q) : '(ceiling)'} | ${lossText(c.max)} | ${ms(c.max?.p50Ms)} / ${ms(c.max?.p95Ms)} / ${ms(c.max?.p99Ms)} | ${ms(c.half?.p50Ms)} / ${ms(c.half?.p95Ms)} / ${ms(c.half?.p99Ms)} | ${ms(c.fixed?.p50Ms)} / ${ms(c.fixed?.p99Ms)}, ${lossText(c.fixed)} (${int(c.fixed?.rate)}/s) | ${c.sameRate ? `${ms(c.sameRate.p50Ms)} / ${ms(c.sameRate.p99Ms)} (${int(c.sameRate.rate)}/s)` : '–'} | ${cpu(c.fixed)} / ${cpu(c.max)} | ${ceiling ? pct(ratio(shape.median[ceiling]?.fixed?.serverCpuMsPer1000, c.fixed?.serverCpuMsPer1000)) : '(ceiling)'} |` +
          (c.error ? ` ⚠ ${c.error.slice(0, 120)}` : ''),
      );
    }
    lines.push('');
    const searches = Object.entries(shape.median)
      .map(([system, c]) =>
        c && c.search.length
          ? `${LABEL[system as SystemName]}: ${marks(c.search)}${c.held?.length ? `; full duration: ${marks(c.held)}` : ''}${c.atTarget ? `; target share of the ceiling's maximum: ${marks([c.atTarget])}` : ''}`
          : '',
      )
      .filter(Boolean);
    if (searches.length)
      lines.push('Rate search (publishes/s, ✓ passed, ✗ failed):', '', ...searches.map((s) => `- ${s}`), '');
  }
  return lines;
}

function svg(r: Results): string {
  const groups: { label: string; bars: { system: SystemName; value: number; ratio?: number }[] }[] = [];
  for (const shape of [...(r.fanout?.shapes ?? []), ...(r.channels?.shapes ?? [])]) {
    const bars = (Object.keys(LABEL) as SystemName[])
      .filter((s) => shape.median[s]?.max)
      .map((system) => {
        const value = shape.median[system]!.max!.deliveriesPerSecond;
        const ceiling = CEILING_OF[system];
        const q = ceiling ? ratio(value, shape.median[ceiling]?.max?.deliveriesPerSecond) : undefined;
        return { system, value, ...(q !== undefined ? { ratio: q } : {}) };
      });
    if (bars.length) groups.push({ label: shape.label, bars });
  }
  // Each group has its own scale: many channels moves far fewer deliveries than fan-out.
  const width = 860;
  const left = 300;
  const barH = 18;
  const plotW = width - left - 150;
  let y = 50;
  const parts: string[] = [];
  for (const group of groups) {
    parts.push(`<text x="10" y="${y + 4}" font-weight="bold">${group.label}</text>`);
    y += 14;
    const max = Math.max(1, ...group.bars.map((b) => b.value));
    for (const bar of group.bars) {
      const w = Math.max(1, (bar.value / max) * plotW);
      parts.push(
        `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${LABEL[bar.system]}</text>`,
        `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${COLOR[bar.system]}"/>`,
        `<text x="${left + w + 6}" y="${y + 13}">${int(bar.value)}/s${bar.ratio !== undefined ? ` (${pct(bar.ratio)} of ceiling)` : ''}</text>`,
      );
      y += barH + 4;
    }
    y += 16;
  }
  const height = y + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="22" font-size="15" font-weight="bold">Maximum sustainable deliveries per second (no loss, no growing queue); each group to its own scale</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

/** A 1-minute load average above this (on the 2-CPU machine) means others shared the cores. */
const LOADED = 2.5;
const LOADED_AT_END = 4;

function metaLines(name: string, meta: Meta | undefined): string[] {
  if (!meta) return [];
  const m = meta.machine;
  // The run's own processes keep both cores busy (a load of 2 to 3), so the end is judged looser.
  const loaded = (m.loadAverage[0] ?? 0) > LOADED || (meta.loadAverageAtEnd[0] ?? 0) > LOADED_AT_END;
  return [
    `- **${name}**: \`${meta.command}\` at ${meta.startedAt} (${meta.seconds} s); load average ${m.loadAverage.join(' / ')} at start, ${meta.loadAverageAtEnd.join(' / ')} at end; product ${meta.productCommit}${loaded ? ` — ⚠ **measured under load** (1-minute load average above ${LOADED} on ${m.nproc} CPUs at the start or ${LOADED_AT_END} at the end: other agents' tests shared the machine; treat these figures as noisy)` : ''}`,
  ];
}

export function writeReport(r: Results, mdPath: string, svgPath: string): void {
  writeFileSync(svgPath, svg(r));
  const anyMeta =
    r.fanout?.meta ??
    r.channels?.meta ??
    r['publish-cost']?.meta ??
    r.recovery?.meta ??
    r['connect-cost']?.meta ??
    r.presence?.meta ??
    r.memory?.meta ??
    r.profile?.meta ??
    r.scale?.meta;
  const m = anyMeta?.machine;
  const t = targets(r);
  const lines: string[] = [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (bench/src/report.ts) from bench/results/latest.json. Do not edit by hand. -->',
    '',
    'Measured on one machine, load generator included: every figure is also given as a ratio to a',
    '**ceiling** measured in the same run with the same clients, a minimal uWebSockets.js server that',
    'only does `app.publish` (bench/src/ceiling/server.ts). Ratios are what matter; absolute values',
    'depend on the machine and on what else runs on it (the load average is recorded).',
    '',
    '## Machine and commands',
    '',
    m
      ? `- ${m.nproc} CPUs, ${m.cpuModel}, ${m.memoryGiB} GiB RAM, Node ${m.node}, Linux ${m.kernel}`
      : '- (no run yet)',
    ...metaLines('fan-out', r.fanout?.meta),
    ...metaLines('many channels', r.channels?.meta),
    ...metaLines('presence', r.presence?.meta),
    ...metaLines('idle memory', r.memory?.meta),
    ...metaLines('profile', r.profile?.meta),
    ...metaLines('publish cost', r['publish-cost']?.meta),
    ...metaLines('recovery', r.recovery?.meta),
    ...metaLines('scale', r.scale?.meta),
    ...metaLines('connection cost', r['connect-cost']?.meta),
    '',
    'Default run (about 13 minutes): `npm run bench`. One scenario: `npm run bench -- --scenario publish-cost --cost-rounds 10`. Longer: `npm run bench -- --scenario fanout --duration 20 --runs 3`. 100,000 connections (not in the default run): `npm run bench -- --scenario scale`.',
    '',
    '## Targets (issues 6, 12 and 16)',
    '',
    '| Target | Goal | Measured | Met | Gap |',
    '|---|---|---|---|---|',
    ...t.map(
      (x) =>
        `| ${x.name} | ${x.goal} | ${x.measured} | ${x.met === undefined ? '–' : x.met ? '✅ yes' : '❌ no'} | ${x.gap} |`,
    ),
    '',
    '![Maximum sustainable deliveries per second](../bench/results/latest.svg)',
    '',
  ];
  if (r.fanout) lines.push('## Fan-out', '', ...throughputTable(r.fanout.shapes));
  if (r.channels)
    lines.push(
      '## Many channels',
      '',
      'Publishes round-robin over the channels; each publish is delivered to 2 subscribers (one per node on 2 nodes).',
      '',
      ...throughputTable(r.channels.shapes),
    );
  lines.push(
    ...runtimesSection(r),
    ...historySection(r),
    ...costSection(r),
    ...recoverySection(r),
    ...connectCostSection(r),
    ...scaleSection(r),
  );
  lines.push(...presenceSection(r), ...memorySection(r), ...profileSection(r));
  lines.push(
    '## Method',
    '',
    '- **Processes.** The harness starts Redis (`redis-server` on a free port, no persistence), the gateways (`node packages/cli/dist/main.js gateway`, `LOG_LEVEL=warn`) or the ceiling servers, a publisher process and client processes (`child_process.fork`), all on 127.0.0.1; servers run under `bash -c "ulimit -n …; exec node …"`. Ctrl-C or SIGTERM to `npm run bench` stops every process the harness started (SIGTERM, SIGKILL after 5 s), then the harness.',
    '- **Clients.** By default a minimal RFC 6455 client on raw TCP sockets (bench/src/lib/raw-ws.ts: the real handshake and framing, pongs to pings, no extensions), because `ws` costs several times more CPU per connection and per frame and the load generator shares the 2 cores with the servers; `--client ws` runs the `ws` package (no compression) instead. Connection and join rates (the presence section) use `bench/native/connect-load.c` instead, a C client on one epoll loop that the harness builds with `cc` (about 50 µs of client CPU per connection against about 180 µs for the Node client; `--connect-client node` keeps the Node one). Measured on 2026-11-22 against the raw-uWS ceiling (1 channel × 200 subscribers, `--quick`): raw client 735,000 deliveries/s at 0.97 µs of client CPU per delivery and 3,100 connections/s per node; `ws` 397,000 deliveries/s at 2.10 µs and 1,550 connections/s. Connections go round-robin over the client processes; subscriber *j* of channel *c* goes to node (*c*·subscribers + *j*) mod nodes, so every channel spans both nodes.',
    '- **Payload.** 100 bytes of JSON text with the send time (CLOCK_MONOTONIC, `process.hrtime`, shared by all processes of the machine) at a fixed offset; receivers parse it without JSON and record the latency in a fixed histogram (10 µs buckets below 10 ms). Latency is publish-to-receive: it includes the HTTP publish.',
    '- **Publisher.** Raw HTTP/1.1 keep-alive connections (64 per node), one request in flight each, paced every millisecond; targets round-robin over the nodes. Switchboard: `POST /api/publish` (V3); ceiling: `POST /publish` with the same body.',
    "- **A step** publishes at a fixed rate, then waits until every expected delivery arrived (or 1 s without progress, at most 5 s). It *passes* with no loss, no failed publish, the publisher within 5% of the asked rate (a publisher with a bounded number of connections falls behind when the server answers slowly; it stops once it is too late to pass), no growing queue (the median latency of the last quarter of the publishes at most twice the first quarter's + 20 ms) and p99 ≤ `--max-p99` (500 ms by default).",
    '- **Maximum sustainable rate.** Doubling (or halving) from a start rate until the verdict flips, then bisection (`--refine` steps); a failed step is tried a second time before it counts as failed; the best passing rate is measured again for `--duration` seconds (a failure tried twice, like a search step) and, if it does not hold, rates an eighth of it lower, down to half: the highest rate that holds for the full duration is the reported maximum (listed after the search as "full duration"), and one that never held is marked ⚠. Then half of it (latency) and the fixed rate (20,000 deliveries/s for fan-out, 10,000 for many channels); Switchboard also at its ceiling\'s half-max rate, so latencies compare at the same load, and at the target share of its ceiling\'s maximum (below).',
    '- **Ceilings.** `ceiling-uws`: one uWS process, HTTP publish → `JSON.parse` → `app.publish`. `ceiling-redis`: two uWS processes; an HTTP publish is `PUBLISH`ed to Redis (ioredis) and both processes, `SUBSCRIBE`d per channel while they have subscribers, `app.publish` what they receive. Switchboard on 2 nodes + Redis is compared with `ceiling-redis`, on 1 node with the memory engine with `ceiling-uws`.',
    "- **Runs and targets.** `--runs N` repeats every case; tables show the run with the median maximum. Each Switchboard system is measured right after its ceiling (a back-to-back pair sees the same machine; drift between runs, from other tenants or thermal state, does not decide a verdict). The throughput targets are checked directly: Switchboard must hold the target share (85% fan-out, 70% many channels) of the maximum its ceiling sustained in the same pair, for the full duration with no loss, in most pairs; the ratio of the two searched maxima is shown beside it, but searched maxima are an eighth of a rate apart, too coarse to decide a threshold. The latency target is the median of the per-pair p99 ratios at the ceiling's half-max rate.",
    '- **History.** Switchboard runs with history on (the default, `HISTORY_SIZE=100`, `HISTORY_TTL_SECONDS=120`) unless a row says off (`HISTORY_SIZE=0`). The throughput and publish-cost subscribers do not opt in to offsets (no `recover=1`) except in the publish-cost row that says so.',
    "- **Scale.** `--scenario scale` opens `--scale-connections` sockets (100,000) over `--scale-nodes` servers (2) + Redis with `bench/native/connect-load.c`, which binds each socket to a source address in 127.0.0.0/8 (`IP_BIND_ADDRESS_NO_PORT`; each client process has 64 addresses of its own) and answers the servers' pings, so sockets outlive the idle timeout while the rest connect. The harness raises each process's open-file limit (`ulimit -Hn`/`-n` in the shell that execs it), never the machine's; when one process cannot get enough files (the hard limit cannot be raised without CAP_SYS_RESOURCE), the sockets go over as many more servers as they need, and the report says so. RSS per connection is each server's RSS growth from after a warm-up of 1,000 connections (opened and closed) to 2 s after the last connection opened, summed, divided by the connections. A publish is timed from just before its HTTP request to the first frame holding its marker on each socket (`watch`/`deliveries` in connect-load), all on CLOCK_MONOTONIC.",
    "- **Product under test.** `--product-dir <checkout>` runs another checkout's built packages (the results record its commit).",
    '',
    '## Options',
    '',
    '```',
    '--scenario a,b     fanout, channels, publish-cost, recovery, connect-cost, presence, memory, profile, scale, or all (default: all but profile and scale)',
    '--duration S       seconds of each recorded measurement (default 1.25)',
    '--step S           seconds of each rate-search step (default 1)',
    '--refine N         bisection steps after the doubling (default 2)',
    '--runs N           repeat each case; the median run (by max deliveries/s) is reported (default 1)',
    '--sizes a,b        fan-out subscriber counts (default 1000,5000)',
    '--channels N       many-channels channel count (default 2000)',
    '--idle N           idle connections per node for memory (default 10000)',
    '--presence-per-node N   presence joins per node (default 10000)',
    '--members N        members-page channel size (default 10000)',
    '--workers N        client processes (default 2)',
    '--max-p99 MS       p99 bound of a passing step (default 500)',
    '--client raw|ws    the WebSocket client of the load generator (default raw)',
    '--connect-client native|node   the client of connection and join rates (default native, built with cc)',
    '--systems a,b      switchboard-redis, switchboard-redis-history-off, switchboard-memory, ceiling-redis, ceiling-uws',
    '--cost-rate N, --cost-seconds S   publish-cost: publishes/s and seconds of each measurement (default 500/s, 5 s)',
    '--cost-warmup S   publish-cost: seconds at the same rate before the first pair of a row, not recorded (default 20)',
    '--cost-rounds N   publish-cost: pairs per row, each row measured at the same time as the ceiling (default 6; the median pair is judged)',
    '--cost-variants a,b   publish-cost rows: ceiling, script-floor, history-on, history-off, history-on-opted-in (default all)',
    "--cost-node-flags F   publish-cost: Node flags for the server processes, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof'",
    '--recovery-clients N, --recovery-publications N   recovery: opted-in clients and publications (default 1000, 100)',
    '--scale-connections N, --scale-nodes N, --scale-publishes N   scale: sockets, servers, publishes timed (default 100000, 2, 3)',
    '--connect-connections N   connect-cost: plain V3 connections opened and closed per system and run (default 10000)',
    "--profile-rate N, --profile-seconds S   the profile scenario's load (default 300/s for 10 s)",
    '--product-dir DIR  the checkout whose built packages are measured (default: this one)',
    '--no-docs          a trial: leave docs/benchmarks.md and bench/results/ as they are (results go to bench/results/tmp/)',
    '--report-only      rewrite docs/benchmarks.md from bench/results/latest.json, run nothing',
    '--runtime node24   fanout and channels with the servers on Node.js 24 (node22, node20…) in the Debian 13 root of',
    '                   .ci/newer-runtimes.sh (needs root; it prepares and mounts the root, then runs the bench)',
    '--quick            tiny sizes, for trying the harness (results in bench/results/tmp, docs untouched)',
    '```',
    '',
  );
  const open = t.filter((x) => x.met === false);
  if (open.length) {
    lines.push(
      '## Open work',
      '',
      'Unmet targets stay open (issues 6, 12 and 16):',
      '',
      ...open.map((x) => `- ${x.name}: ${x.measured}; gap ${x.gap}.`),
      '',
    );
  }
  writeFileSync(mdPath, lines.join('\n'));
}
