// Number formats of the report (docs/benchmarks.md), shared by report.ts and each scenario's
// section of it. An absent figure is a dash.

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
