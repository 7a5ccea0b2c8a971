import type { Topic } from '@switchboard/core';
import type { ConnectionState } from './connection';
import { activityNow } from './presence-events';
import { publishToChannel } from '../fanout/events';
import { localTopicOf } from '../fanout/topics';
import { sendTo } from '../fanout/send';
import type { ChannelDeps } from './channels';
import type { PresenceDeps } from './presence-events';

/**
 * Online users of a protocol with user sign-in and watchlists (`Dialect.users`: Pusher's
 * watchlist events). A signed-in connection is a presence entry, identity = its user, in the
 * user's own topic (`users.channel(user)`), so a user is online while any of its connections is,
 * on any node; the entry goes when the connection closes, or with its node (the cluster's
 * cleanup of a dead node announces the leave through the dialect's `presence.left`). A watcher
 * listens to the topics of the users it watches, without counts or presence of its own there,
 * and is told at sign-in which of them are online.
 *
 * What a connection watches and where it is present are kept aside (a weak map), so
 * connections that never sign in carry nothing for it.
 */
interface Watching {
  readonly self: Topic;
  readonly user: string;
  readonly watched: Topic[];
  /** The users of `watched`, in its order. */
  readonly watchedUsers: string[];
  /** The join in flight, which the leave waits for (a leave first would leave the entry behind). */
  joining: Promise<unknown> | undefined;
}

const watching = new WeakMap<ConnectionState, Watching>();

/**
 * Signs `state` in as `user`: `success` (the dialect's answer) goes out once its watchlist is in
 * place (so a watched user's coming online after it reaches it), or at once without `users`;
 * the watched users online at that moment follow it.
 */
export async function signInUser(
  ctx: ChannelDeps,
  state: ConnectionState,
  user: string,
  watchlist: readonly string[],
  success: string,
): Promise<void> {
  const users = state.dialect.users;
  if (!users || watching.has(state)) return sendTo(ctx, state, success);
  let answered = false;
  try {
    answered = await enterUser(ctx, state, user, watchlist, users, success);
  } finally {
    if (!answered) sendTo(ctx, state, success);
  }
}

async function enterUser(
  ctx: ChannelDeps,
  state: ConnectionState,
  user: string,
  watchlist: readonly string[],
  users: NonNullable<ConnectionState['dialect']['users']>,
  success: string,
): Promise<boolean> {
  const topicOf = (id: string): Topic => ({
    key: state.key,
    protocol: state.dialect.family,
    channel: users.channel(id),
  });
  const entry: Watching = { self: topicOf(user), user, watched: [], watchedUsers: [], joining: undefined };
  watching.set(state, entry);
  const joining = ctx.engine.presence.join(
    entry.self,
    { connId: state.id, nodeId: ctx.nodeId, member: { uuid: state.id, user } },
    activityNow(),
  );
  entry.joining = joining;
  const joined = await joining;
  if (joined.firstOfIdentity)
    await publishToChannel(ctx, entry.self, users.online([user]), { stampable: false });
  const topics = await Promise.all(watchlist.map((id) => ctx.subscriptions.acquire(topicOf(id))));
  if (state.closed) {
    for (const topic of topics) ctx.subscriptions.release(topic);
    return true;
  }
  for (const [index, topic] of topics.entries()) {
    entry.watched.push(topic);
    entry.watchedUsers.push(watchlist[index]!);
    ctx.registry.joinTopic(topic, state);
    state.conn?.subscribe(localTopicOf(state.dialect.variants, topic, false));
  }
  sendTo(ctx, state, success);
  const counts = await Promise.all(topics.map((topic) => ctx.engine.presence.identities(topic, 0, 1)));
  const online = watchlist.filter((_id, index) => (counts[index]?.count ?? 0) > 0);
  if (online.length > 0 && !state.closed) sendTo(ctx, state, users.online(online));
  return true;
}

/**
 * Tells a signed-in watcher again which of its watched users are online and which are not
 * (`Repair`, once this node's broker subscriptions are back after the engine was away): the
 * `online`/`offline` events published while this node was not subscribed (another node rewriting
 * its users, or cleaning up leaves that failed during the outage) reached it at most once, and
 * maybe not at all. Watchers may so hear a state they already knew again, never a wrong one
 * (docs/pusher.md, "User authentication and watchlists").
 */
export async function retellWatchlist(ctx: PresenceDeps, state: ConnectionState): Promise<void> {
  const entry = watching.get(state);
  const users = state.dialect.users;
  if (!entry || !users || entry.watched.length === 0 || state.closed) return;
  const counts = await Promise.all(entry.watched.map((topic) => ctx.engine.presence.identities(topic, 0, 1)));
  const online: string[] = [];
  const offline: string[] = [];
  entry.watchedUsers.forEach((user, index) => {
    ((counts[index]?.count ?? 0) > 0 ? online : offline).push(user);
  });
  if (state.closed) return;
  if (online.length > 0) sendTo(ctx, state, users.online(online));
  if (offline.length > 0) sendTo(ctx, state, users.offline(offline));
}

/** A closing connection leaves its user's topic (announced when it was the user's last) and its watched ones. */
export function signOutUser(ctx: ChannelDeps, state: ConnectionState): void {
  const entry = watching.get(state);
  if (!entry) return;
  watching.delete(state);
  for (const topic of entry.watched) {
    ctx.registry.leaveTopic(topic, state);
    ctx.subscriptions.release(topic);
  }
  // While the node drains its presence is removed wholesale, and announced from there.
  if (ctx.status.draining) return;
  const users = state.dialect.users;
  const leave = () => ctx.engine.presence.leave(entry.self, state.id);
  (entry.joining ? entry.joining.then(leave, leave) : leave())
    .then((left) => {
      if (left?.lastOfIdentity && users)
        return publishToChannel(ctx, entry.self, users.offline([entry.user]), { stampable: false });
      return undefined;
    })
    .catch((error: unknown) => {
      ctx.logger.warn({ err: error }, "presence leave failed; this node's share is rewritten to the engine");
      ctx.repair.repairSoon();
    });
}

/** Whether `state` is signed in and present in `topic` (its user's own topic). */
export function isSignedInAt(state: ConnectionState, topic: Topic): boolean {
  const entry = watching.get(state);
  return (
    entry !== undefined &&
    entry.self.key === topic.key &&
    entry.self.protocol === topic.protocol &&
    entry.self.channel === topic.channel
  );
}

/**
 * Writes a signed-in connection's entry in its user's topic again (`Repair`, after the engine
 * was away or lost its data): idempotent; when the user had no entry left in the engine (Redis
 * came back empty, or its entry was lost), its watchers are told it is online again, as at
 * sign-in. Resolves false for a connection that is not signed in.
 */
export async function rejoinUser(ctx: PresenceDeps, state: ConnectionState): Promise<boolean> {
  const entry = watching.get(state);
  const users = state.dialect.users;
  if (!entry || !users || state.closed) return false;
  const joined = await ctx.engine.presence.join(
    entry.self,
    { connId: state.id, nodeId: ctx.nodeId, member: { uuid: state.id, user: entry.user } },
    activityNow(),
  );
  if (joined.firstOfIdentity)
    await publishToChannel(ctx, entry.self, users.online([entry.user]), { stampable: false });
  return true;
}
