import type { Protocol } from '@switchboard/core';
import type { Dialect } from './dialect';

/** The registered dialects, found by the family of a topic. */
export class Dialects {
  private readonly byFamily: ReadonlyMap<Protocol, Dialect>;

  constructor(readonly all: readonly Dialect[]) {
    this.byFamily = new Map(all.map((dialect) => [dialect.family, dialect]));
    if (this.byFamily.size !== all.length) throw new Error('two dialects share a topic family');
  }

  /** Every registered family, in registration order. */
  get families(): Protocol[] {
    return this.all.map((dialect) => dialect.family);
  }

  /** The dialect of a topic's family, if one is registered here. */
  find(family: Protocol): Dialect | undefined {
    return this.byFamily.get(family);
  }
}
