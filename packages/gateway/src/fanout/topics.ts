import type { Topic } from '@switchboard/core';
import type { Dialect } from '../protocols/dialect';
import { flatString } from '../flat-string';

/**
 * Local uWS topic names. Each variant of a frame is serialized once and published to its own
 * topic, so uWS does the per-recipient work:
 * - plain: what sockets that did not opt in to recovery receive (each of the dialect's variants:
 *   a primary as is, a secondary stamped with its channel);
 * - events: the same frames minus stream publications, for opted-in subscriptions (presence
 *   events, binary relays: frames that carry no offset);
 * - stream: stream publications with their `system::offset`, in offset order, for opted-in
 *   subscriptions that have caught up (docs/protocol.md, "History and recovery").
 * `|` cannot occur in keys or channel names.
 */
export type TopicVariant = 'plain' | 'events' | 'stream';

const SUFFIX: Record<TopicVariant, string> = { plain: '', events: 'e', stream: 'o' };

const name = (prefix: string, variant: TopicVariant, t: Topic): string =>
  `${prefix}${SUFFIX[variant]}|${t.key}|${t.channel}`;

/** The prefix of a subscription's names: its dialect's primary or secondary variant. */
const prefixOf = (variants: Dialect['variants'], primary: boolean): string =>
  primary ? variants.primary : (variants.secondary ?? variants.primary);

export const localTopicOf = (
  variants: Dialect['variants'],
  t: Topic,
  primary: boolean,
  variant: TopicVariant = 'plain',
): string => name(prefixOf(variants, primary), variant, t);

/** One variant's names (a primary or a secondary), one per kind of subscriber. */
export type VariantNames = Readonly<Record<TopicVariant, string>>;

/**
 * A topic's local uWS topic names, built on its first delivery and kept while it has sockets on
 * this node (`Registry`), instead of on every delivery: a name built per call is a cons string,
 * which V8 flattens again for each native call it is passed to. A topic never published to
 * holds none. `secondary` is the stamped variant (undefined for a dialect without one).
 */
export class TopicNames {
  private primaryNames: VariantNames | undefined;
  private secondaryNames: VariantNames | undefined;

  constructor(
    private readonly topic: Topic,
    private readonly variants: Dialect['variants'],
  ) {}

  get primary(): VariantNames {
    return (this.primaryNames ??= family(this.variants.primary, this.topic));
  }

  get secondary(): VariantNames | undefined {
    const { secondary } = this.variants;
    if (secondary === undefined) return undefined;
    return (this.secondaryNames ??= family(secondary, this.topic));
  }
}

const family = (prefix: string, t: Topic): VariantNames => ({
  plain: flatString(name(prefix, 'plain', t)),
  events: flatString(name(prefix, 'events', t)),
  stream: flatString(name(prefix, 'stream', t)),
});
