import type { Protocol } from '@switchboard/core';

/** The engine namespace of V3 topics (stored in Redis key names: never changes). */
export const FAMILY: Protocol = 'v3';
