import { CHANNEL_NAME_RULE, isValidChannelName } from '@switchboard/core';
import type { JsonValue } from '@switchboard/core';
import type { Answer, Command } from '../dialect';
import { v4Event } from '../piesocket/frames';

/** Control frames of a V4 socket (docs/protocol.md, "Control frames"); every one is answered within the SDKs' 10 s. */
export function controlCommand(event: string, data: unknown): Command {
  const fields =
    data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  const channel = fields['channel'];
  const name = typeof channel === 'string' ? channel : '';
  const answer =
    (kind: 'subscribe' | 'unsubscribe' | 'member_list'): Answer =>
    (error, retry) => {
      const type = error === undefined ? `system::${kind}_success` : `system::${kind}_error`;
      const data =
        error === undefined
          ? { channel: name }
          : retry
            ? { channel: name, error, retry: true }
            : { channel: name, error };
      return v4Event(type, data);
    };
  const problem =
    typeof channel !== 'string'
      ? 'data.channel is required (a string)'
      : !isValidChannelName(name)
        ? `Invalid channel name: use ${CHANNEL_NAME_RULE}`
        : undefined;
  switch (event) {
    case 'system::subscribe': {
      if (problem) return { type: 'reply', frame: answer('subscribe')(problem) };
      // A subscribe without `user` presents the socket's own user (from its URL or JWT).
      const user =
        fields['user'] === undefined || fields['user'] === '' ? undefined : (fields['user'] as JsonValue);
      return {
        type: 'subscribe',
        channel: name,
        request: {
          token: typeof fields['jwt'] === 'string' ? fields['jwt'] : undefined,
          user,
          uuid: typeof fields['uuid'] === 'string' ? fields['uuid'] : undefined,
          presence: isOn(fields['presence']),
          recover: isOn(fields['recover']),
          since: fields['since'],
          epoch: fields['epoch'],
        },
        answer: answer('subscribe'),
      };
    }
    case 'system::unsubscribe':
      if (problem) return { type: 'reply', frame: answer('unsubscribe')(problem) };
      return { type: 'unsubscribe', channel: name, answer: answer('unsubscribe') };
    case 'system::get_members':
      if (problem) return { type: 'reply', frame: answer('member_list')(problem) };
      return { type: 'members', channel: name, answer: answer('member_list') };
    default:
      return {
        type: 'error',
        text: `Unknown control event "${event}"; expected system::subscribe, system::unsubscribe or system::get_members`,
      };
  }
}

const isOn = (value: unknown): boolean => value === true || value === 1 || value === '1' || value === 'true';
