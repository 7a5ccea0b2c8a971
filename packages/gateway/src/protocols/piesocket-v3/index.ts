import type { Dialect } from '../dialect';
import { BOOT_FRAME, errorFrame, stampChannel, v3ErrorEvent } from '../piesocket/frames';
import { parseObject, PING } from '../piesocket/parse';
import { pieSocketUpgrade } from '../piesocket/upgrade';
import { isObjectText, offsetFrame, positionFrame } from '../piesocket/stream-frames';
import { FAMILY } from './family';
import { ROUTES } from './routes';

const PATH = /^\/v3\/([^/]*)\/?$/;

const VERBATIM = { stampable: false } as const;
const BINARY = { stampable: false, binary: true } as const;

/**
 * PieSocket V3 (docs/protocol.md): one channel per socket, named by the URL; frames are relayed
 * verbatim (binary ones too); presence events carry the whole roster, one event per connection.
 */
export const piesocketV3: Dialect = {
  family: FAMILY,

  // `be=1`: the Dart SDK waits for a boot frame.
  upgrade: pieSocketUpgrade(PATH, (query) => query.get('be') === '1'),
  greeting: BOOT_FRAME,

  text(_state, text) {
    if (text === PING) return undefined;
    if (text.includes('"system::')) {
      const event = parseObject(text)?.['event'];
      if (typeof event === 'string' && event.startsWith('system::'))
        return { type: 'error', text: `Unknown event "${event}": V3 connections take no control events` };
    }
    return { type: 'publish', body: text, options: VERBATIM };
  },
  binary: (_state, base64) => ({ type: 'publish', body: base64, options: BINARY }),

  closingError: errorFrame,
  frameError: (_state, text) => v3ErrorEvent(text),
  stamp: stampChannel,
  binaryFrames: true,

  variants: { primary: '3' },

  isObject: isObjectText,
  offsetFrame,
  positionFrame,

  presence: {
    listing: 'entries',
    memberList: (_sub, members) => JSON.stringify({ event: 'system:member_list', data: { members } }),
    joined: (_sub, member, joined) => ({
      body: JSON.stringify({
        event: 'system:member_joined',
        data: { member, members: joined.listed?.members ?? [] },
      }),
      stampable: false,
    }),
    rejoined: () => undefined,
    leaveCarriesRoster: true,
    left: (_topic, left, roster) => ({
      body: JSON.stringify({ event: 'system:member_left', data: { member: left.member, members: roster } }),
      stampable: false,
    }),
  },

  kick: { targeted: false },

  routes: ROUTES,
};
