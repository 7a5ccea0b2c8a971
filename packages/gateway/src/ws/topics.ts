import type { Topic } from '@switchboard/core';

/**
 * Local uWS topic names. V3 has one per channel; V4 has two, because the primary channel's
 * sockets receive frames unchanged while secondaries' frames carry a `system::channel` stamp:
 * each variant is serialized once and published to its own topic. `|` cannot occur in keys or
 * channel names.
 */
export const v3Topic = (t: Topic): string => `3|${t.key}|${t.channel}`;
export const v4PrimaryTopic = (t: Topic): string => `4p|${t.key}|${t.channel}`;
export const v4SecondaryTopic = (t: Topic): string => `4s|${t.key}|${t.channel}`;

export const localTopicOf = (t: Topic, primary: boolean): string =>
  t.protocol === 'v3' ? v3Topic(t) : primary ? v4PrimaryTopic(t) : v4SecondaryTopic(t);

/** A stable map key for a topic. */
export const topicKey = (t: Topic): string => `${t.protocol}|${t.key}|${t.channel}`;
