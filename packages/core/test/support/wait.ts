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
