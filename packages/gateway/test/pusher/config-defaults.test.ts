import { loadConfig } from '@switchboard/core';
import {
  DEFAULT_ACTIVITY_TIMEOUT_SECONDS,
  DEFAULT_IDENTITY_LIMITS,
  DEFAULT_PONG_TIMEOUT_SECONDS,
} from '../../src/protocols/pusher';

/** The configuration's PUSHER_ defaults are the protocol modules' own (docs/pusher.md, "Limits"). */
describe('Pusher configuration defaults', () => {
  it('match the defaults of the protocol modules', () => {
    const { pusher } = loadConfig({});
    expect(pusher.identity).toEqual(DEFAULT_IDENTITY_LIMITS);
    expect(pusher.activityTimeoutSeconds).toBe(DEFAULT_ACTIVITY_TIMEOUT_SECONDS);
    expect(pusher.pongTimeoutSeconds).toBe(DEFAULT_PONG_TIMEOUT_SECONDS);
  });
});
