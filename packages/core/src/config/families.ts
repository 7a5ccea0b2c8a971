import type { Protocol } from '../types';

/**
 * The topic families (`Topic.protocol`) the gateways' wire protocols register, one per dialect
 * (docs/architecture.md, "Protocol dialects"): the PieSocket V3 and V4 namespaces. Presence
 * reads a channel's identities across all of them, and listings that span families list them in
 * this order. A family's name is part of Redis key names and stored data: it never changes.
 */
export const TOPIC_FAMILIES: readonly Protocol[] = ['v3', 'v4'];

/** The family of the account API's channel reads and publishes when a request names none (PieSocket V4). */
export const DEFAULT_FAMILY: Protocol = 'v4';

/**
 * Families whose dialect announces presence per identity and marks JSON-object messages where
 * they enter (PieSocket V4). The others list one member per connection and relay text verbatim.
 */
export const IDENTITY_FAMILIES: ReadonlySet<Protocol> = new Set(['v4']);
