import type { KickSelector, Publication } from '@switchboard/core';
import type { NodeDeps } from '../deps';
import type { KeyCache } from '../key-cache';
import type { Meters } from '../meters';
import type { UnconfirmedPublications } from './unconfirmed';

/** What the cluster API's handlers take (docs/openapi.yaml). */
export interface ApiDeps extends NodeDeps {
  readonly keys: KeyCache;
  readonly meters: Meters;
  readonly unconfirmed: UnconfirmedPublications;
  /** This node's delivery of a REST publication it accepted (`Delivery.deliver`). */
  readonly delivery: { deliver(publication: Publication, sender: undefined, streamed: boolean): void };
  /** Kicks this node's matching connections at once (`executeKick`); returns how many. */
  kickHere(selector: KickSelector): number;
}
