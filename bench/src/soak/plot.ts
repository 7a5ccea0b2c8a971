import type { SoakResult } from './soak';
import { heapRule } from './verdict';

const COLORS = ['#2b6cb0', '#dd6b20'];
const WIDTH = 860;
const LEFT = 70;
const RIGHT = 20;
const PANEL_H = 150;
const GAP = 46;

interface Series {
  label: string;
  color: string;
  points: { t: number; v: number }[];
  dashed?: boolean;
}

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * step >= v) return m * step;
  return 10 * step;
}

function panel(
  top: number,
  title: string,
  unit: string,
  series: Series[],
  endS: number,
  shade: { from: number; to: number; label: string }[],
): string[] {
  const plotW = WIDTH - LEFT - RIGHT;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map((p) => p.v))) * 1.05);
  const x = (t: number): number => LEFT + (t / endS) * plotW;
  const y = (v: number): number => top + PANEL_H - (v / max) * PANEL_H;
  const out: string[] = [`<text x="${LEFT}" y="${top - 8}" font-weight="bold">${title}</text>`];
  for (const s of shade) {
    out.push(
      `<rect x="${x(s.from).toFixed(1)}" y="${top}" width="${(x(s.to) - x(s.from)).toFixed(1)}" height="${PANEL_H}" fill="#edf2f7"/>`,
      `<text x="${((x(s.from) + x(s.to)) / 2).toFixed(1)}" y="${top + 12}" text-anchor="middle" fill="#718096" font-size="10">${s.label}</text>`,
    );
  }
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    out.push(
      `<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e2e8f0"/>`,
      `<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${Number(v.toPrecision(3))} ${unit}</text>`,
    );
  }
  const minuteStep = endS > 1200 ? 300 : endS > 120 ? 60 : 10;
  for (let t = 0; t <= endS + 1e-9; t += minuteStep) {
    out.push(
      `<text x="${x(t).toFixed(1)}" y="${top + PANEL_H + 14}" text-anchor="middle">${minuteStep >= 60 ? `${t / 60} min` : `${t} s`}</text>`,
    );
  }
  out.push(
    `<rect x="${LEFT}" y="${top}" width="${plotW}" height="${PANEL_H}" fill="none" stroke="#a0aec0"/>`,
  );
  let legendX = WIDTH - RIGHT - 10;
  for (const s of [...series].reverse()) {
    const w = s.label.length * 6.5 + 26;
    legendX -= w;
    out.push(
      `<line x1="${legendX}" x2="${legendX + 18}" y1="${top - 12}" y2="${top - 12}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="4 3"' : ''}/>`,
      `<text x="${legendX + 22}" y="${top - 8}">${s.label}</text>`,
    );
  }
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join('');
    out.push(
      `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="4 3"' : ''}/>`,
    );
  }
  return out;
}

/** RSS, V8 heap used (with the post-collection floors the verdict uses) and event-loop lag p99 per gateway. */
export function soakSvg(r: SoakResult, title: string): string {
  const endS = r.options.durationS;
  const mib = (b: number): number => b / 2 ** 20;
  const rule = heapRule(endS);
  const shade = [
    { from: 0, to: Math.min(rule.warmupS, endS), label: 'warm-up' },
    { from: rule.warmupS, to: Math.min(rule.warmupS + rule.windowS, endS), label: 'baseline window' },
    { from: Math.max(endS - rule.windowS, 0), to: endS, label: 'final window' },
  ];
  const perNode = (pick: (s: SoakResult['nodes'][number]['samples'][number]) => number): Series[] =>
    r.nodes.map((n, i) => ({
      label: n.nodeId,
      color: COLORS[i % COLORS.length]!,
      points: n.samples.map((s) => ({ t: s.t, v: pick(s) })),
    }));
  // Dashed: what the latest full collection left (the gauge), or the lowest reading per bucket
  // for a product without the gauge.
  const heapSeries: Series[] = [
    ...perNode((s) => mib(s.heapUsedBytes)),
    ...r.heap.map((h, i) => ({
      label: `${r.nodes[i]!.nodeId} ${h.basis === 'after-gc' ? 'after GC' : 'floor'}`,
      color: COLORS[i % COLORS.length]!,
      dashed: true,
      points:
        h.basis === 'after-gc'
          ? r.nodes[i]!.samples.filter((s) => s.heapAfterGcBytes > 0).map((s) => ({
              t: s.t,
              v: mib(s.heapAfterGcBytes),
            }))
          : h.floors.map((f) => ({ t: f.t, v: mib(f.bytes) })),
    })),
  ];
  let top = 60;
  const parts: string[] = [];
  const add = (t: string, unit: string, series: Series[]): void => {
    parts.push(...panel(top, t, unit, series, endS, shade));
    top += PANEL_H + GAP;
  };
  add(
    'Resident set size (/proc)',
    'MiB',
    perNode((s) => mib(s.rssBytes)),
  );
  add(
    r.heap[0]?.basis === 'after-gc'
      ? 'V8 heap used; dashed: heap after the latest full collection (switchboard_heap_used_after_gc_bytes)'
      : 'V8 heap used (nodejs_heap_size_used_bytes); dashed: lowest reading per bucket',
    'MiB',
    heapSeries,
  );
  add(
    'Event-loop lag p99 per 10 s (nodejs_eventloop_lag_p99_seconds)',
    'ms',
    perNode((s) => s.lagP99Ms),
  );
  add(
    'Open connections (switchboard_connections)',
    '',
    perNode((s) => s.connections),
  );
  const height = top;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="22" font-size="15" font-weight="bold">${title}</text>`,
    `<text x="10" y="40" fill="#4a5568">${r.verdict.ok ? 'PASS' : 'FAIL'}: heap growth ${r.heap.map((h, i) => `${r.nodes[i]!.nodeId} ${(h.growth * 100).toFixed(1)} %`).join(', ')}; ${r.checkpoints.length} checkpoints, ${r.checkpoints.filter((c) => c.drift.length).length} with drift</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
