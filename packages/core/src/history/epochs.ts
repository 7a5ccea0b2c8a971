import { randomBytes } from 'node:crypto';

/** Random per process (48 bits), so epochs of different processes and restarts never meet. */
const PROCESS_PREFIX = randomBytes(6).toString('base64url');
let sequence = 0;

/**
 * A new epoch token: unique across processes and within this one, at most 19 characters of
 * A-Z a-z 0-9 _ - (8 random ones and a base36 counter). Cheap enough to draw one per publish,
 * which the Redis engine does: its script keeps the candidate only when it starts a stream.
 */
export function newEpoch(): string {
  return PROCESS_PREFIX + (sequence++).toString(36);
}

/** Longest epoch any engine issues; a client's `epoch` longer than this is not one. */
export const MAX_EPOCH_LENGTH = 32;

const EPOCH = /^[A-Za-z0-9_-]{1,32}$/;

/** Whether `value` has the shape of an epoch (1 to 32 characters of A-Z a-z 0-9 _ -). */
export function isValidEpoch(value: unknown): value is string {
  return typeof value === 'string' && EPOCH.test(value);
}
