// The memory scenario's section of docs/benchmarks.md and its rows of the verdict table.
import { LABEL, int } from '../../lib/format';
import type { Results, Target } from '../../results';

/** The idle memory section. */
export function memorySection(r: Results): string[] {
  const lines: string[] = [];
  if (r.memory) {
    lines.push(
      '## Idle memory',
      '',
      'RSS of one server process (`/proc/<pid>/status` VmRSS) after a warm-up and before the connections, then with every connection open and idle (10 per channel), divided by the connections. Gateways run with the product\'s Node flags (`packages/cli/src/node-flags.ts`: `--max-semi-space-size=8`, passed by the CLI shebang, `npm start` and the Docker entrypoint); the "Node defaults" row is the same gateway without them. Under a burst of connections V8 grows its young generation to the cap and keeps it: at Node 20\'s default cap (16 MiB per semi-space) that is ~14 MiB more RSS, ~1.4 KiB per connection at 10,000, for no measured throughput.',
      '',
      '| System | Protocol | Connections | RSS before → after (MiB) | KiB per connection |',
      '|---|---|---|---|---|',
      ...r.memory.cases.map(
        (c) =>
          `| ${LABEL[c.system].replace(', 2 nodes', ', 1 node').replace(', 2 processes', ', 1 process')}${c.nodeDefaults ? ' (Node defaults)' : ''} | ${c.protocol.toUpperCase()} | ${int(c.ok)} | ${(c.rssBeforeKiB / 1024).toFixed(1)} → ${(c.rssAfterKiB / 1024).toFixed(1)} | ${c.perConnectionKiB.toFixed(2)}${c.error ? ` ⚠ ${c.error.slice(0, 100)}` : ''} |`,
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
    const met = c.error ? undefined : c.perConnectionKiB <= 3;
    out.push({
      name: `Idle memory, ${c.system === 'switchboard-redis' ? 'Redis engine' : 'memory engine'}, ${c.protocol.toUpperCase()}`,
      goal: '≤ 3 KiB RSS per connection',
      measured: `${c.perConnectionKiB.toFixed(2)} KiB at ${int(c.ok)} connections`,
      met,
      gap: met === false ? `${(c.perConnectionKiB - 3).toFixed(2)} KiB per connection` : '–',
    });
  }
  return out;
}
