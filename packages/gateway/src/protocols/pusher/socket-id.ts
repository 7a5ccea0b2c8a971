import { randomInt } from 'node:crypto';
import { flatString } from '../../flat-string';

/**
 * Socket ids (docs/pusher.md, "Socket ids"): `<node number>.<counter>`, both decimal, as Pusher
 * writes them (`pusher-js` and the server SDKs check `^\d+\.\d+$`).
 *
 * Unique cluster-wide because no two live allocators share a node number and one allocator never
 * repeats a counter: the node number is drawn once per process (registered in Redis by the
 * gateway, where an INCR never hands out the same number twice; or `randomNodeNumber()`, 48 random
 * bits, when there is no shared engine), and the counter only goes up, from 1, within the
 * process. A restarted process takes a new node number, so ids of its previous life are never
 * reissued. The counter stays exact up to 2^53 (285 years at a million connections a second).
 */

const SOCKET_ID = /^\d{1,20}\.\d{1,20}$/;

/** Whether `value` has the shape of a socket id (any allocator's). */
export function isSocketId(value: unknown): value is string {
  return typeof value === 'string' && SOCKET_ID.test(value);
}

/** A node number for a process that cannot register one: 48 random bits (collision odds about n²/2^49 for n live nodes). */
export const randomNodeNumber = (): number => randomInt(1, 2 ** 48 - 1);

export interface SocketIdAllocator {
  /** The next id, never returned before by this allocator. */
  next(): string;
  readonly nodeNumber: number;
}

export function createSocketIdAllocator(nodeNumber: number): SocketIdAllocator {
  if (!Number.isSafeInteger(nodeNumber) || nodeNumber < 0)
    throw new RangeError(`A socket id node number is a non-negative safe integer, not ${nodeNumber}`);
  const prefix = `${nodeNumber}.`;
  let counter = 0;
  return {
    nodeNumber,
    next(): string {
      counter += 1;
      // Flat: the id is kept for the socket's lifetime, and a joined string is two nodes and the
      // counter's own string (about 20 bytes more per connection).
      return flatString(`${prefix}${counter}`);
    },
  };
}
