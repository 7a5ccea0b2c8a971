import type { SoakResult } from './soak';

export interface SoakMeta {
  command: string;
  startedAt: string;
  seconds: number;
  machine: { nproc: number; cpuModel: string; memoryGiB: number; node: string; loadAverage: number[] };
  loadAverageAtEnd: number[];
  productCommit: string;
}

const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};

/** The figures of one run as Markdown, for docs/reliability.md ("Soak run"). */
export function soakSummary(r: SoakResult, meta: SoakMeta, svgPath: string): string {
  const o = r.options;
  const warm = o.durationS / 5;
  const lines: string[] = [
    `Run of ${meta.startedAt.slice(0, 16).replace('T', ' ')} UTC: \`${meta.command}\` (${meta.seconds} s in all), ` +
      `${meta.machine.nproc} CPUs (${meta.machine.cpuModel}), ${meta.machine.memoryGiB} GiB, Node ${meta.machine.node}; ` +
      `load average ${meta.machine.loadAverage.join(' / ')} at the start and ${meta.loadAverageAtEnd.join(' / ')} at the end; ` +
      `product ${meta.productCommit}.`,
    '',
    `Heap kept: ${r.heap[0]?.basis === 'after-gc' ? 'median of `switchboard_heap_used_after_gc_bytes` over the window' : 'lowest used-heap reading of the window'}.`,
    '',
    `**Verdict: ${r.verdict.ok ? 'PASS' : 'FAIL'}**${r.verdict.ok ? '' : ` (${r.verdict.reasons.join('; ')})`}.`,
    '',
    '| Gateway | RSS after warm-up → end (MiB) | Heap kept, baseline → final window (MiB) | Heap growth | Event-loop lag p99 per 10 s: median / worst after warm-up (ms) | CPU used (s) |',
    '|---|---|---|---|---|---|',
  ];
  r.nodes.forEach((n, i) => {
    const after = n.samples.filter((s) => s.t >= warm);
    const first = after[0];
    const last = n.samples[n.samples.length - 1];
    const h = r.heap[i]!;
    const lags = after.map((s) => s.lagP99Ms);
    lines.push(
      `| ${n.nodeId} | ${first ? mib(first.rssBytes) : '–'} → ${last ? mib(last.rssBytes) : '–'} | ${mib(h.baselineBytes)} → ${mib(h.finalBytes)} | ${(h.growth * 100).toFixed(1)} % | ${quantile(lags, 0.5).toFixed(0)} / ${Math.max(0, ...lags).toFixed(0)} | ${last ? last.cpuSeconds.toFixed(0) : '–'} |`,
    );
  });
  const redisAfter = r.redis.filter((s) => s.t >= warm);
  const redisLast = r.redis[r.redis.length - 1];
  const fleetLast = r.fleet[r.fleet.length - 1];
  const c = r.counters;
  const k = r.kicks;
  lines.push(
    '',
    `- Sockets: ${int(c.opened)} opened and ${int(c.closedByClient)} closed by the clients in ${o.durationS} s ` +
      `(${int(c.failed)} opens failed${c.failed ? `: ${JSON.stringify(c.failures)}` : ''}; after warm-up ${int(r.opensAfterWarmup.failed)} of ${int(r.opensAfterWarmup.opened + r.opensAfterWarmup.failed)}); closed by the gateways: ${JSON.stringify(c.gone)}` +
      `${fleetLast ? `; ${int(fleetLast.framesReceived)} frames received, ${int(fleetLast.pingsAnswered)} pings answered` : ''}.`,
    `- Closes the run did not cause: ${r.unexpectedDetails.length ? r.unexpectedDetails.map((u) => `${u.code} at ${u.t} s (${u.protocol}${u.user ? ' presence' : ''} on gateway ${u.node + 1}, open ${u.ageS} s)`).join(', ') : 'none'}; the gateways counted by code (\`switchboard_closes_total\`): ${r.serverCloses.map((c, i) => `${r.nodes[i]!.nodeId} ${JSON.stringify(c)}`).join(', ')}.`,
    `- Kicks: ${k.keyKicks} \`POST /api/kick\` of the kick key and ${k.userKicks} \`POST /api/v4/kick\` of one user closed ` +
      `${int(k.kickedSockets)} sockets (+${k.lateKicked} that opened while a kick was on its way); ${k.wrong} closed that no kick matched, ${k.missed} matched but left open.`,
    `- Publishes: ${int(r.publishes.sent)} sent, ${int(r.publishes.failed)} failed, ${int(r.publishes.skipped)} skipped because all 64 publishing connections were busy.`,
    `- Redis: ${redisAfter[0] ? mib(redisAfter[0].usedMemoryBytes) : '–'} MiB after warm-up, ${redisLast ? mib(redisLast.usedMemoryBytes) : '–'} MiB at the end (${redisLast ? int(redisLast.keys) : '–'} keys), ${redisLast ? redisLast.cpuSeconds.toFixed(0) : '–'} CPU-s.`,
    `- Checkpoints (churn paused until the cluster agreed with the sockets): ` +
      r.checkpoints
        .map(
          (cp) =>
            `${cp.label}: ${int(cp.open)} open, ${cp.drift.length ? `drift (${cp.drift.slice(0, 2).join('; ')})` : `agreed after ${cp.settledMs} ms`}`,
        )
        .join('; ') +
      '.',
    `- Left in Redis after every socket closed: ${r.leftovers.length ? r.leftovers.slice(0, 5).join(', ') : 'no counts or presence key'}.`,
    `- Gateway error lines: ${r.gatewayErrors.length ? r.gatewayErrors.slice(0, 3).join(' / ') : 'none'}.`,
    '',
    `![Soak run: RSS, heap and event-loop lag per gateway](${svgPath})`,
    '',
  );
  return lines.join('\n');
}
