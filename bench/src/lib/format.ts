// Number formats of the report (docs/benchmarks.md), shared by report.ts and each scenario's
// section of it. An absent figure is a dash.

import type { SystemName } from './procs';
import type { Step } from '../scenarios/load';

export const int = (n: number | undefined): string =>
  n === undefined ? '–' : Math.round(n).toLocaleString('en-US');
export const ms = (n: number | undefined): string =>
  n === undefined ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(1);
export const pct = (n: number | undefined): string =>
  n === undefined || !Number.isFinite(n) ? '–' : `${(n * 100).toFixed(0)}%`;
/** a / b, or undefined without both. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a !== undefined && b ? a / b : undefined;
}

export const cpu = (s: Step | undefined): string =>
  s?.serverCpuMsPer1000 ? s.serverCpuMsPer1000.toFixed(2) : '–';
export const marks = (steps: Step[]): string =>
  steps.map((s) => `${s.rate}${s.pass ? '✓' : '✗'}`).join(' → ');
export const lossText = (s: Step | undefined): string =>
  s ? (s.loss === 0 ? '0' : `${(s.loss * 100).toFixed(3)}%`) : '–';

/** How the report names each system. */
export const LABEL: Record<SystemName, string> = {
  'switchboard-redis': 'Switchboard, 2 nodes + Redis',
  'switchboard-redis-history-off': 'Switchboard, 2 nodes + Redis, history off (`HISTORY_SIZE=0`)',
  'switchboard-memory': 'Switchboard, 1 node, memory engine',
  'ceiling-redis': 'Ceiling: raw uWS + Redis hop, 2 processes',
  'ceiling-uws': 'Ceiling: raw uWS, 1 process',
  'ceiling-redis-script': "Ceiling with Switchboard's publish script, 2 processes",
  'ceiling-redis-pusher': 'Ceiling: raw uWS + Redis hop, 2 processes (Pusher frames)',
  'ceiling-redis-script-pusher': "Ceiling with Switchboard's publish scripts, 2 processes (Pusher frames)",
  soketi: 'Soketi 1.6.1, 2 nodes + Redis adapter (Pusher protocol)',
  'switchboard-pusher': 'Switchboard, 2 nodes + Redis (Pusher protocol)',
};
