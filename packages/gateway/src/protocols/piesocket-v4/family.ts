import type { Protocol } from '@switchboard/core';

/** The engine namespace of V4 topics (stored in Redis key names: never changes). */
export const FAMILY: Protocol = 'v4';
