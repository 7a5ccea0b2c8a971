// Readings of Redis' `INFO commandstats`, for the scenarios that count Redis' work per operation.

/** The commands that run a script (each counts once; the commands inside it count apart). */
export const SCRIPT_CALLS = ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'];

/** `INFO commandstats` as calls per command (`cmdstat_evalsha:calls=3,…` → evalsha: 3). */
export function commandCalls(info: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  return calls;
}

/** `INFO commandstats` as calls and microseconds (Redis' own time in the command) per command. */
export function commandTimes(info: string): Record<string, { calls: number; usec: number }> {
  const out: Record<string, { calls: number; usec: number }> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    out[match[1]!] = { calls: Number(match[2]), usec: Number(match[3]) };
  return out;
}

/** Calls per command between two `commandCalls` readings (commands with none left out). */
export function callsBetween(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [command, calls] of Object.entries(after)) {
    const d = calls - (before[command] ?? 0);
    if (d > 0) delta[command] = d;
  }
  return delta;
}
