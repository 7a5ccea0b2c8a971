/**
 * `new Date(ms).toISOString()` for the timestamps of log records and stored publications, which
 * are taken at every publish: V8 formats a date through its generic printf machinery, about 7,000
 * instructions a call (counted with callgrind, docs/performance.md, "What the gateway's
 * JavaScript costs"). The text up to the second is kept and reused while the second lasts.
 */
let second = Number.NaN;
let upToSecond = '';

export function isoTime(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    // Outside what a clock reads (before 1970, past year 9999, not an integer): the general way.
    if (!Number.isSafeInteger(ms) || ms < 0 || ms >= 253_402_300_800_000) return new Date(ms).toISOString();
    upToSecond = new Date(s * 1000).toISOString().slice(0, 20);
    second = s;
  }
  const milli = ms - s * 1000;
  return `${upToSecond}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
