import type { Topic } from '@switchboard/core';

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

export const v3Topic = (t: Topic, variant: TopicVariant = 'plain'): string => name('3', variant, t);
export const v4PrimaryTopic = (t: Topic, variant: TopicVariant = 'plain'): string => name('4p', variant, t);
export const v4SecondaryTopic = (t: Topic, variant: TopicVariant = 'plain'): string => name('4s', variant, t);

export const localTopicOf = (t: Topic, primary: boolean, variant: TopicVariant = 'plain'): string =>
  t.protocol === 'v3'
    ? v3Topic(t, variant)
    : primary
      ? v4PrimaryTopic(t, variant)
      : v4SecondaryTopic(t, variant);

/** A stable map key for a topic. */
export const topicKey = (t: Topic): string => `${t.protocol}|${t.key}|${t.channel}`;
