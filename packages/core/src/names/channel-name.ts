/**
 * Channel names: 1 to 128 characters of `A-Z a-z 0-9 _ - . = @ , ;` (docs/protocol.md, "Channel names"), a superset of
 * PieSocket's 30-character `[A-Za-z0-9_-]` rule that admits Laravel-style names.
 */
const CHANNEL_NAME = /^[A-Za-z0-9_\-.=@,;]{1,128}$/;

export function isValidChannelName(name: unknown): name is string {
  return typeof name === 'string' && CHANNEL_NAME.test(name);
}

/** `private-…` channels need a JWT; `presence-…` channels turn presence on for everyone in them. */
export const isPrivateChannel = (name: string): boolean => name.startsWith('private-');
export const isPresenceChannel = (name: string): boolean => name.startsWith('presence-');

export const CHANNEL_NAME_RULE = '1 to 128 characters of A-Z a-z 0-9 _ - . = @ , ;';
