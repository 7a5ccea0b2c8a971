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
