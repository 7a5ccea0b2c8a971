/** A public API key: it appears in client URLs and scopes everything else. */
export type ApiKey = string;
/** A channel name, validated by `isValidChannelName`. */
export type ChannelName = string;
/**
 * A topic's family: an opaque namespace that a wire protocol of the gateway registers
 * (`TOPIC_FAMILIES`). Channels of two families never see each other's messages, history or
 * counts; presence reads a channel's identities across families. The value appears in Redis key
 * names and stored data, so a family's name never changes.
 */
export type Protocol = string;
/** A gateway node's identity in the cluster (`NODE_ID`). */
export type NodeId = string;
/** A connection id unique in the cluster: `<nodeId>/<sequence>`. */
export type ConnId = string;
/** A member's identity: `user` when set (JSON text unless it is a string), else `uuid`. */
export type Identity = string;

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A presence member as clients and the APIs see it; `user` is omitted when unknown. */
export interface Member {
  uuid: string;
  user?: JsonValue;
}

/**
 * Everything a fan-out message, a presence set or a count is scoped by. Never changed once made:
 * the Redis keys built from one topic object are cached by its identity (redis/keys.ts).
 */
export interface Topic {
  readonly key: ApiKey;
  readonly protocol: Protocol;
  readonly channel: ChannelName;
}

/**
 * A topic as one string, for maps and sets: its three parts joined by a separator (U+001F) that
 * none of them can contain.
 */
export const topicId = (t: Topic): string => `${t.key}\u001f${t.protocol}\u001f${t.channel}`;

export function identityOf(member: Member): Identity {
  if (member.user === undefined || member.user === null) return member.uuid;
  return typeof member.user === 'string' ? member.user : JSON.stringify(member.user);
}
