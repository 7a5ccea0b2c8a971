/**
 * A flat copy of a string. Strings built by concatenation (Node's `randomUUID` joins 20 pieces)
 * are trees of V8 cons strings: kept per connection, a 36-character uuid costs ~450 bytes of
 * tree nodes instead of ~56 for the flat string. Strings kept for a connection's lifetime are
 * flattened once, when they are made.
 */
export const flatString = (value: string): string => Buffer.from(value, 'utf8').toString('utf8');
