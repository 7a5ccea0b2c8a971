import type { Publication, StreamPosition } from '@switchboard/core';

/**
 * Frames of opted-in subscriptions (docs/protocol.md, "History and recovery"). A stream
 * publication whose text is a JSON object gets a top-level `"system::offset"` spliced in (like
 * `system::channel`, without re-serializing it); any other text arrives wrapped as
 * `{"event":"system::message","data":"<the exact text>","system::offset":n}`.
 */

/** Whether a stream publication's text is a JSON object (V4 marks it where it enters). */
export function isObjectPublication(publication: Publication): boolean {
  if (publication.stampable) return true;
  if (publication.topic.protocol === 'v4') return false;
  const { body } = publication;
  if (body.charCodeAt(0) !== 123 /* { */) return false;
  try {
    const value: unknown = JSON.parse(body);
    return !!value && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** `publication` as an opted-in subscription receives it; `channel` stamps a V4 secondary. */
export function offsetFrame(
  publication: Publication,
  isObject: boolean,
  offset: number,
  channel?: string,
): string {
  const stamps =
    channel === undefined
      ? `"system::offset":${offset}`
      : `"system::channel":${JSON.stringify(channel)},"system::offset":${offset}`;
  if (!isObject) return `{"event":"system::message","data":${JSON.stringify(publication.body)},${stamps}}`;
  const { body } = publication;
  const inner = body.slice(0, body.lastIndexOf('}')).trimEnd();
  return `${inner}${inner.endsWith('{') ? '' : ','}${stamps}}`;
}

export interface PositionReport extends StreamPosition {
  /** Absent when the subscription did not ask to resume (no `since`). */
  readonly recovered?: boolean;
  readonly missed: number;
}

/** `system::position`: where a subscription stands; `channel` stamps a V4 secondary. */
export function positionFrame(topicChannel: string, report: PositionReport, channel?: string): string {
  const data: Record<string, string | number | boolean> = {
    channel: topicChannel,
    epoch: report.epoch,
    offset: report.offset,
  };
  if (report.recovered !== undefined) data['recovered'] = report.recovered;
  data['missed'] = report.missed;
  const frame: Record<string, unknown> = { event: 'system::position', data };
  if (channel !== undefined) frame['system::channel'] = channel;
  return JSON.stringify(frame);
}
