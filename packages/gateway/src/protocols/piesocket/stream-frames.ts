import type { Publication } from '@switchboard/core';
import type { PositionReport } from '../../streams/topic-stream';
import { parseObject } from './parse';

/**
 * Frames of opted-in subscriptions (docs/protocol.md, "History and recovery"). A stream
 * publication whose text is a JSON object gets a top-level `"system::offset"` spliced in (like
 * `system::channel`, without re-serializing it); any other text arrives wrapped as
 * `{"event":"system::message","data":"<the exact text>","system::offset":n}`.
 */

/**
 * Whether a stream publication's text is a JSON object, by reading it (V3, whose messages are
 * relayed verbatim). V4 marks its JSON objects where they enter (`stampable`).
 */
export function isObjectText(publication: Publication): boolean {
  return publication.stampable === true || parseObject(publication.body) !== undefined;
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
