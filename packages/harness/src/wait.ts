/**
 * Polls `check` until it holds (state written by another process or another turn), failing after
 * `timeoutMs` with `what` in the message: tests await state this way instead of sleeping.
 */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  /** Between two checks: raise it for checks that cost something (HTTP requests, Redis reads). */
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Waits on state that changes with events (socket opens, frames, closes): whoever changes it
 * calls `changed`, and every `until` re-checks its condition then. No polling, no sleeps.
 */
export class Waiters {
  private readonly waiting = new Set<() => void>();

  constructor(private readonly description: () => string = () => '') {}

  /** Wakes every `until`: call on every event that may change what they wait for. */
  changed(): void {
    for (const wake of [...this.waiting]) wake();
  }

  /**
   * Resolves once `condition` holds; rejects at the deadline, with `what` (a function is called
   * only then, for texts that describe the state at the deadline) and the description.
   */
  until(condition: () => boolean, timeoutMs: number, what: string | (() => string)): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        this.waiting.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiting.delete(check);
        const text = typeof what === 'string' ? what : what();
        const described = this.description();
        reject(new Error(`${text}: not within ${timeoutMs} ms${described ? ` (${described})` : ''}`));
      }, timeoutMs);
      this.waiting.add(check);
      check();
    });
  }
}

/** Offsets as ranges for failure messages: `[3,4,5,9]` → `3-5, 9`. */
export function ranges(offsets: readonly number[]): string {
  const sorted = [...new Set(offsets)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}
