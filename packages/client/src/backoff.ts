/** Reconnect timing: exponential backoff with full jitter (docs/client.md, "Reconnecting"). */
export interface BackoffOptions {
  /** Milliseconds; the n-th consecutive retry waits a random time in [0, min(cap, base · 2^n)). */
  baseMs?: number;
  capMs?: number;
  /** A socket that stays open this long resets the retry count. */
  resetAfterMs?: number;
}

export const BACKOFF_DEFAULTS: Required<BackoffOptions> = {
  baseMs: 500,
  capMs: 30_000,
  resetAfterMs: 30_000,
};

export function reconnectDelay(
  attempt: number,
  options: Required<BackoffOptions>,
  random = Math.random,
): number {
  return random() * Math.min(options.capMs, options.baseMs * 2 ** Math.min(attempt, 30));
}
