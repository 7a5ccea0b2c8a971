import type { Protocol } from '../types';

/**
 * The topic families (`Topic.protocol`) the gateways' wire protocols register, one per dialect
 * (docs/architecture.md, "Protocol dialects"): the PieSocket V3 and V4 namespaces and the Pusher
 * Channels one. Presence
 * reads a channel's identities across all of them, and listings that span families list them in
 * this order. A family's name is part of Redis key names and stored data: it never changes.
 */
export const TOPIC_FAMILIES: readonly Protocol[] = ['v3', 'v4', 'pusher'];

/** The family of the account API's channel reads and publishes when a request names none (PieSocket V4). */
export const DEFAULT_FAMILY: Protocol = 'v4';

/**
 * Families whose dialect announces presence per identity and marks JSON-object messages where
 * they enter (PieSocket V4). The others list one member per connection and relay text verbatim.
 */
export const IDENTITY_FAMILIES: ReadonlySet<Protocol> = new Set(['v4']);

/**
 * Families whose presence members are users wherever they are listed, `GET /api/members` too:
 * each identity once, shown by its most recently active entry (Pusher: a presence channel's
 * members are its `user_id`s, as Pusher's own HTTP API lists them; docs/pusher.md, "Decisions").
 * V4 is listed per identity by its own reads and `/api/channel-members`, but per entry by
 * `/api/members`, whose entries stay as they always were.
 */
export const USER_MEMBER_FAMILIES: ReadonlySet<Protocol> = new Set(['pusher']);

/**
 * The worlds connection counts are kept in (docs/pusher.md, "Counts are per family"): the
 * PieSocket families (V3 and V4) count together, as they always have; Pusher connections are
 * counted apart. A family's name is part of Redis key names: it never changes.
 */
export type CountFamily = 'piesocket' | 'pusher';

/** Every count family, the PieSocket one (the original, unmarked one) first. */
export const COUNT_FAMILIES: readonly CountFamily[] = ['piesocket', 'pusher'];

/** The count family of a topic family: Pusher's own, every other one PieSocket's. */
export const countFamilyOf = (protocol: Protocol): CountFamily =>
  protocol === 'pusher' ? 'pusher' : 'piesocket';
