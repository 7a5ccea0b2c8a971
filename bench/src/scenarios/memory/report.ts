// The memory scenario's section of docs/benchmarks.md and its rows of the verdict table.
import { LABEL, int } from '../../lib/format';
import type { Results, Target } from '../../results';
import type { MemoryCase } from './run';

/**
 * The figure a memory target is judged on: the slope when the case has one (what one more socket
 * costs; docs/benchmarks.md, "Idle memory"), else the reading from the baseline (results from
 * before the slope).
 */
export const judgedKiB = (c: MemoryCase): number => c.slope?.perConnectionKiB ?? c.perConnectionKiB;

/** The slope's table cell: RSS at its two socket counts and the KiB per connection between them. */
export const slopeCell = (c: MemoryCase): string =>
  c.slope
    ? `${int(c.slope.low)} → ${int(c.slope.high)}: ${(c.slope.rssLowKiB / 1024).toFixed(1)} → ${(c.slope.rssHighKiB / 1024).toFixed(1)} MiB, **${c.slope.perConnectionKiB.toFixed(2)}**`
    : '–';

/** What the idle-memory tables measure, and why the slope is the judged figure. */
export const MEASURED =
  "Each server takes its connections in three steps, half of them, all, then half as many again (5,000, 10,000 and 15,000 by default; 10 per channel, each step on channels of its own), RSS read 1.5 s after each step without a GC. Two figures per connection: from the baseline (RSS with all of them less RSS after a warm-up of 50 connections opened and closed, divided by them: the figure of the tables before 2026-11-27, now read with a pause at half) and the slope (RSS at the last step less RSS at the first, divided by the sockets between them). The slope is what targets are judged on: the baseline figure also charges the sockets with what a process grows once under a burst of connections and keeps, whatever their number — V8's young generation when it had shrunk while idle (up to 2 × 8 MiB), code optimized during the burst and the compiler's memory in the malloc arenas of V8's helper threads, hash tables doubling — which moved that figure by ±0.5 KiB per connection between runs (docs/performance.md, \"Idle memory per connection\").";

/** The idle memory section. */
export function memorySection(r: Results): string[] {
  const lines: string[] = [];
  if (r.memory) {
    lines.push(
      '## Idle memory',
      '',
      'RSS of one server process (`/proc/<pid>/status` VmRSS) with its connections open and idle. ' +
        MEASURED +
        ' Gateways run with the product\'s Node flags (`packages/cli/src/node-flags.ts`: `--max-semi-space-size=8`, passed by the CLI shebang, `npm start` and the Docker entrypoint); the "Node defaults" row is the same gateway without them. Under a burst of connections V8 grows its young generation to the cap and keeps it: at Node 20\'s default cap (16 MiB per semi-space) that is ~14 MiB more RSS, ~1.4 KiB per connection at 10,000, for no measured throughput.',
      '',
      '| System | Protocol | Connections | RSS before → after (MiB) | KiB per connection from the baseline | Slope: sockets, RSS (MiB), KiB per connection |',
      '|---|---|---|---|---|---|',
      ...r.memory.cases.map(
        (c) =>
          `| ${LABEL[c.system].replace(', 2 nodes', ', 1 node').replace(', 2 processes', ', 1 process')}${c.nodeDefaults ? ' (Node defaults)' : ''} | ${c.protocol.toUpperCase()} | ${int(c.ok)} | ${(c.rssBeforeKiB / 1024).toFixed(1)} → ${(c.rssAfterKiB / 1024).toFixed(1)} | ${c.perConnectionKiB.toFixed(2)} | ${slopeCell(c)}${c.error ? ` ⚠ ${c.error.slice(0, 100)}` : ''} |`,
      ),
      '',
    );
  }
  return lines;
}

/** The memory scenario's rows of the verdict table. */
export function memoryTargets(r: Results): Target[] {
  const out: Target[] = [];
  for (const c of (r.memory?.cases ?? []).filter(
    (c) => c.system.startsWith('switchboard') && !c.nodeDefaults,
  )) {
    const kib = judgedKiB(c);
    const met = c.error ? undefined : kib <= 3;
    out.push({
      name: `Idle memory, ${c.system === 'switchboard-memory' ? 'memory engine' : 'Redis engine'}, ${c.system === 'switchboard-pusher' ? 'Pusher' : c.protocol.toUpperCase()}`,
      goal: '≤ 3 KiB RSS per connection',
      measured: c.slope
        ? `${kib.toFixed(2)} KiB per connection from ${int(c.slope.low)} to ${int(c.slope.high)} connections (${c.perConnectionKiB.toFixed(2)} from the baseline at ${int(c.ok)})`
        : `${kib.toFixed(2)} KiB at ${int(c.ok)} connections`,
      met,
      gap: met === false ? `${(kib - 3).toFixed(2)} KiB per connection` : '–',
    });
  }
  return out;
}
