/**
 * The 100-byte message every publish carries: `{"t":"<16-digit µs>","s":"<10-digit seq>","p":"…"}`.
 * `t` is CLOCK_MONOTONIC (process.hrtime), shared by every process on the machine, so a receiver
 * computes publish-to-receive latency without clock sync. Fixed offsets: parsing needs no JSON.
 */
export const PAYLOAD_BYTES = 100;
const T_OFFSET = 6;
const T_DIGITS = 16;
const PAD = 'x'.repeat(PAYLOAD_BYTES - 48);

export function nowUs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e6 + Math.floor(ns / 1000);
}

export function payload(seq: number): string {
  const t = String(nowUs()).padStart(T_DIGITS, '0');
  const s = String(seq % 1e10).padStart(10, '0');
  return `{"t":"${t}","s":"${s}","p":"${PAD}"}`;
}

/** The embedded timestamp, or -1 when the frame is not a benchmark payload. */
export function timestampOf(data: Buffer): number {
  if (data.length < T_OFFSET + T_DIGITS || data[2] !== 0x74 /* t */ || data[0] !== 0x7b) return -1;
  let value = 0;
  for (let i = T_OFFSET; i < T_OFFSET + T_DIGITS; i++) {
    const digit = data[i]! - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** The embedded sequence number (position of the publish in its step). */
export function seqOf(data: Buffer): number {
  let value = 0;
  for (let i = 29; i < 39; i++) value = value * 10 + (data[i]! - 0x30);
  return value;
}
