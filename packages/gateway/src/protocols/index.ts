import type { Dialect } from './dialect';
import { piesocketV3 } from './piesocket-v3';
import { piesocketV4 } from './piesocket-v4';

/** The wire protocols this gateway speaks: a new one is registered here (and its family in core's config). */
export const DIALECTS: readonly Dialect[] = [piesocketV3, piesocketV4];

export { Dialects } from './registry';
export type { Dialect } from './dialect';
