import { TOPIC_FAMILIES } from '@switchboard/core';
import type { Protocol } from '@switchboard/core';
import type { Dialect } from './dialect';

/** The registered dialects, found by the family of a topic. */
export class Dialects {
  private readonly byFamily: ReadonlyMap<Protocol, Dialect>;

  /**
   * Every dialect's family must be one of the deployment's (`families`, core's `TOPIC_FAMILIES`):
   * presence reads a channel's identities across exactly those.
   */
  constructor(
    readonly all: readonly Dialect[],
    families: readonly Protocol[] = TOPIC_FAMILIES,
  ) {
    this.byFamily = new Map(all.map((dialect) => [dialect.family, dialect]));
    if (this.byFamily.size !== all.length) throw new Error('two dialects share a topic family');
    for (const { family } of all)
      if (!families.includes(family))
        throw new Error(
          `the dialect of topic family "${family}" is not registered in TOPIC_FAMILIES (packages/core/src/config/families.ts)`,
        );
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
