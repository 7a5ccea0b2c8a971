import type { JoinResult, Member } from '@switchboard/core';
import type { ChannelEvent, ChannelView, Command, Dialect } from '../dialect';
import { errorFrame, stampChannel, v4Event } from '../piesocket/frames';
import { parseObject, PING } from '../piesocket/parse';
import { pieSocketUpgrade } from '../piesocket/upgrade';
import { offsetFrame, positionFrame } from '../piesocket/stream-frames';
import { controlCommand } from './control';
import { FAMILY } from './family';
import { ROUTES } from './routes';

const PATH = /^\/v4\/([^/]*)\/?$/;

const VERBATIM = { stampable: false } as const;
const OBJECT = { stampable: true } as const;
const BINARY = { stampable: true, systemBinary: true } as const;

/** A frame of `sub`'s channel as its socket receives it: stamped unless it is the primary. */
const channelFrame = (sub: ChannelView, body: string): string =>
  sub.primary ? body : stampChannel(body, sub.channel);

/**
 * PieSocket V4 (docs/protocol.md): a primary channel named by the URL and secondaries added with
 * control frames; JSON messages are routed by `system::channel` and may be direct
 * (`system::to`); presence events are deltas, one per identity.
 */
export const piesocketV4: Dialect = {
  family: FAMILY,

  upgrade: pieSocketUpgrade(PATH, () => false),
  greeting: '',

  /**
   * Control events (`system::…`) become commands; other JSON objects are routed by
   * `system::channel` (default: the primary) and may be direct messages (`system::to`); anything
   * else belongs to the primary and is relayed verbatim.
   */
  text(state, text): Command | undefined {
    if (text === PING) return undefined;
    const frame = parseObject(text);
    if (!frame) return { type: 'publish', body: text, options: VERBATIM };
    const event = frame['event'];
    if (typeof event === 'string' && event.startsWith('system::'))
      return controlCommand(event, frame['data']);

    const tag = frame['system::channel'];
    // A secondary channel; a tag naming the primary routes like no tag.
    let channel: string | undefined;
    let body = text;
    if (tag !== undefined) {
      if (typeof tag !== 'string' || !state.subs.has(tag))
        return { type: 'error', text: `Not subscribed to channel ${JSON.stringify(tag)}` };
      if (tag !== state.primary) channel = tag;
      // The canonical form has no tag: each recipient's variant is stamped (or not) at delivery.
      delete frame['system::channel'];
      body = JSON.stringify(frame);
    }
    const to = frame['system::to'];
    if (to !== undefined && typeof to !== 'string') {
      const error = 'system::to must be a string (the target user)';
      return channel === undefined ? { type: 'error', text: error } : { type: 'error', text: error, channel };
    }
    const options = to === undefined ? OBJECT : { stampable: true, to };
    return channel === undefined
      ? { type: 'publish', body, options }
      : { type: 'publish', channel, body, options };
  },
  binary: (_state, base64) => ({
    type: 'publish',
    body: JSON.stringify({ event: 'system::binary', data: base64 }),
    options: BINARY,
  }),

  closingError: errorFrame,
  frameError(state, text, channel) {
    if (channel === undefined || channel === state.primary) return v4Event('system::error', { error: text });
    return v4Event('system::error', { channel, error: text }, channel);
  },
  stamp: stampChannel,
  // A V4 body is always text (binary frames arrive as `system::binary` events).
  binaryFrames: false,

  variants: { primary: '4p', secondary: '4s' },

  // V4 marks its JSON objects where they enter.
  isObject: (publication) => publication.stampable === true,
  offsetFrame,
  positionFrame,

  presence: {
    listing: 'identities',
    memberList: (sub, members, total) =>
      channelFrame(sub, v4Event('system::member_list', { channel: sub.channel, members, count: total })),
    joined: (sub, member, joined) => memberJoined(sub.channel, member, joined),
    rejoined: (sub, member, joined) => memberJoined(sub.channel, member, joined),
    leaveCarriesRoster: false,
    left: (topic, left) =>
      left.lastOfIdentity
        ? {
            body: v4Event('system::member_left', {
              channel: topic.channel,
              member: left.member,
              count: left.identityCount,
            }),
            stampable: true,
          }
        : undefined,
  },

  kick: {
    targeted: true,
    kicked: (sub, reason) => channelFrame(sub, v4Event('system::kicked', { channel: sub.channel, reason })),
  },

  routes: ROUTES,
};

/** `member_joined`, once per identity. */
function memberJoined(channel: string, member: Member, joined: JoinResult): ChannelEvent | undefined {
  if (!joined.firstOfIdentity) return undefined;
  return {
    body: v4Event('system::member_joined', { channel, member, count: joined.identityCount }),
    stampable: true,
  };
}
