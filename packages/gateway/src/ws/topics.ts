import type { Topic } from '@switchboard/core';
import { flatString } from './flat-string';

/**
 * Local uWS topic names. Each variant of a frame is serialized once and published to its own
 * topic, so uWS does the per-recipient work:
 * - plain: what sockets that did not opt in to recovery receive (V3; V4 primary as is; V4
 *   secondary with a `system::channel` stamp);
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

/** A topic's family: V3, V4 primary, or V4 secondary (stamped with `system::channel`). */
const familyPrefix = (t: Topic, primary: boolean): string =>
  t.protocol === 'v3' ? '3' : primary ? '4p' : '4s';

export const localTopicOf = (t: Topic, primary: boolean, variant: TopicVariant = 'plain'): string =>
  name(familyPrefix(t, primary), variant, t);

/** One family's names (V3, V4 primary or V4 secondary), one per variant. */
export type VariantNames = Readonly<Record<TopicVariant, string>>;

/**
 * A topic's local uWS topic names, built on its first delivery and kept while it has sockets on
 * this node (`Registry`), instead of on every delivery: a name built per call is a cons string,
 * which V8 flattens again for each native call it is passed to. A topic never published to
 * holds none. `secondary` is V4's stamped family (undefined on V3).
 */
export class TopicNames {
  private primaryNames: VariantNames | undefined;
  private secondaryNames: VariantNames | undefined;

  constructor(private readonly topic: Topic) {}

  get primary(): VariantNames {
    return (this.primaryNames ??= family(familyPrefix(this.topic, true), this.topic));
  }

  get secondary(): VariantNames | undefined {
    if (this.topic.protocol === 'v3') return undefined;
    return (this.secondaryNames ??= family(familyPrefix(this.topic, false), this.topic));
  }
}

const family = (prefix: string, t: Topic): VariantNames => ({
  plain: flatString(name(prefix, 'plain', t)),
  events: flatString(name(prefix, 'events', t)),
  stream: flatString(name(prefix, 'stream', t)),
});

/** A stable map key for a topic. */
export const topicKey = (t: Topic): string => `${t.protocol}|${t.key}|${t.channel}`;
