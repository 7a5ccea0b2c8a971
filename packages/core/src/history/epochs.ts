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
