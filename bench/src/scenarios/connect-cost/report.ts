// The connect-cost scenario's section of docs/benchmarks.md and its row of the verdict table.
import { LABEL, int, ms } from '../../lib/format';
import type { Results, Target } from '../../results';
import { CONNECT_CHANNEL_SIZE, CONNECT_COST_TARGET } from './run';
import type { ConnectCostSide } from './run';

export function connectCostSection(r: Results): string[] {
  const conn = r['connect-cost'];
  if (!conn) return [];
  const mid = conn.median ?? conn.runs[0];
  const row = (label: string, side: ConnectCostSide | undefined, of?: ConnectCostSide): string => {
    if (!side) return `| ${label} | – | – | – | – | – | – |`;
    const times = (a: number, b: number | undefined): string =>
      of && b ? ` (${(a / b).toFixed(2)}×)` : of ? '' : ' (ceiling)';
    const phase = (p: ConnectCostSide['connect'], base: number | undefined): string =>
      `${ms(p.msPer1000)} = ${ms((p.cpu.servers * 1e6) / Math.max(side.ok, 1))} + ${ms((p.cpu.redis * 1e6) / Math.max(side.ok, 1))}${times(p.msPer1000, base)}`;
    return `| ${label} | ${int(side.ok)}${side.failed ? ` (${int(side.failed)} failed)` : ''}${side.uncounted ? ` (${int(side.uncounted)} never counted: refused after the 101?)` : ''} in ${ms(side.openSeconds)} s | ${phase(side.connect, of?.connect.msPer1000)} | ${phase(side.close, of?.close.msPer1000)} | ${ms(side.totalMsPer1000)}${times(side.totalMsPer1000, of?.totalMsPer1000)} | ${side.first ? `${ms(side.first.totalMsPer1000)}${times(side.first.totalMsPer1000, of?.first?.totalMsPer1000)}` : '–'} | ${ms((side.connect.cpu.clients * 1e6) / Math.max(side.ok, 1))} |`;
  };
  const lines = [
    '## Connection cost',
    '',
    `${int(conn.connections)} plain V3 connections (no presence, no recovery, no JWT: \`/v3/<channel>?api_key=…\`), in channels of ${CONNECT_CHANNEL_SIZE} spread over both nodes (so each node subscribes each channel in Redis, as the ceiling does), opened by \`bench/native/connect-load.c\` at 400 in flight, then all closed at once. Each run measures the Redis-hop ceiling, then Switchboard, each with two such storms: the first right after the servers started, which also pays V8 compiling the connection path (once per process: a gateway compiles many more functions than the ceiling, about 0.2 s of CPU per node, so its share per connection depends on the storm's size), then the measured one, on which the target is judged. CPU is utime + stime of the two server processes and redis-server from \`/proc/<pid>/stat\`; a phase runs from its first connect (or close) until Redis shows its work done: every channel subscribed and, on Switchboard, every connection counted (open), or every channel unsubscribed and the count back to 0 (close), polled every 10 ms. The servers' idle work during a phase (timers) counts too. A reconnect storm after a rolling restart is this, once for every client: the target is judged on open + close.`,
    '',
    '| System | Opened | Open: server + Redis CPU per 1,000 (ms) = servers + Redis | Close: same | Open + close | First storm after the start: open + close | Client CPU per 1,000 opens (ms) |',
    '|---|---|---|---|---|---|---|',
    row(LABEL['ceiling-redis'], mid?.ceiling),
    row(LABEL['switchboard-redis'], mid?.switchboard, mid?.ceiling),
    '',
  ];
  if (conn.runs.length > 1)
    lines.push(
      `Every run (open / close / open + close / the first storm's open + close, × the same run's ceiling): ${conn.runs
        .map((run) =>
          run.ratio
            ? `${run.ratio.connect.toFixed(2)} / ${run.ratio.close.toFixed(2)} / ${run.ratio.total.toFixed(2)} / ${run.ratio.first?.toFixed(2) ?? '–'}`
            : `⚠ ${run.error?.slice(0, 80) ?? 'incomplete'}`,
        )
        .join('; ')}; the table shows the run with the median open + close ratio.`,
      '',
    );
  lines.push(
    "What a connection costs Switchboard beyond the ceiling's upgrade and per-channel `SUBSCRIBE`: admission (the key's record from the node's cache, Origin, channel name, limits), the connection's state and registry entries, the channel's count change (one script call per API key and event-loop turn for all the connections of the turn: 78 `EVALSHA` for 10,000 opens, 4 for their closes), the metrics; on the first storm after a start also V8 compiling all that (`perf` on a gateway during 10,000 connections that followed only 1,000: about 30% of its CPU was TurboFan in V8's worker threads, some 70 functions optimized, against a few on a second storm). Admission completes inside uWS's upgrade handler, without a promise, when it needs no round trip (the key cached, no JWT, no per-key connection limit, the channel already subscribed on the node: here few do, as a channel's 10 clients arrive together and wait for its first `SUBSCRIBE`); a plain subscription is entered and left without a promise; the connection state reaches uWS as the one property of the upgrade's user data (uWS copies each property onto its socket object). Measured on 2026-11-23, 5 runs each, before and after those changes: open + close 1.86× → 1.54× the ceiling (medians; open 2.39× → 1.91×, close 1.26× → 1.09×), and on the first storm after the start 2.28× → 1.72×.",
    '',
  );
  if (mid?.error) lines.push(`⚠ ${mid.error}`, '');
  return lines;
}

/** How the publish-cost figures were taken: in pairs with the ceiling, or (older results) runs one after the other. */

/** The connect-cost scenario's row of the verdict table. */
export function connectCostTargets(r: Results): Target[] {
  const out: Target[] = [];
  const conn = r['connect-cost'];
  if (conn) {
    const mid = conn.median;
    const rated = conn.runs.filter((run) => run.ratio);
    const q = mid?.ratio?.total;
    const met = q === undefined ? undefined : q <= CONNECT_COST_TARGET;
    const x = (n: number | undefined): string => (n === undefined ? '–' : `${n.toFixed(2)}×`);
    out.push({
      name: 'Connection cost, plain V3, 2 nodes + Redis',
      goal: `server + Redis CPU per 1,000 connections (open + close) ≤ ${CONNECT_COST_TARGET}× the Redis-hop ceiling's`,
      measured:
        mid?.switchboard && mid.ceiling
          ? `${x(q)}: ${ms(mid.switchboard.totalMsPer1000)} vs ${ms(mid.ceiling.totalMsPer1000)} ms per 1,000 (open ${x(mid.ratio?.connect)}, close ${x(mid.ratio?.close)}; the first storm after the start, V8 compiling included: ${x(mid.ratio?.first)})${rated.length > 1 ? ` (median of ${rated.length} back-to-back runs: ${rated.map((run) => x(run.ratio?.total)).join(', ')})` : ''}`
          : `no complete run${conn.runs[0]?.error ? `: ${conn.runs[0].error.slice(0, 100)}` : ''}`,
      met,
      gap: met === false ? `${x(q)} (target ${CONNECT_COST_TARGET}×)` : met ? '–' : 'not measured',
    });
  }
  return out;
}
