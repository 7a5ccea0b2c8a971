/** Polls `check` until it holds, failing after `timeoutMs` with `what` in the message. */
export async function waitUntil(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Time for a message that should not arrive to show up anyway. Absence cannot be awaited; callers
 * first wait for the same message at a subscribed witness, so this only covers delivery skew
 * between two connections.
 */
export const settle = (ms = 50): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let sequence = 0;
/** A name unique in this process and across runs, valid as API key, channel, node id and prefix. */
export const unique = (label: string): string =>
  `${label}-${process.pid}-${Date.now().toString(36)}-${(sequence++).toString(36)}`;
