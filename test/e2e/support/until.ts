/**
 * Polls `read` every 20 ms until `done` holds for what it returns, and returns that value: for
 * state another service writes after the event a test can await (a gateway's counts, read through
 * the account API). Fails after 10 s with the last value read.
 */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (value: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
