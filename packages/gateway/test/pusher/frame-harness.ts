import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type ClientCommand,
  PING_FRAME,
  PONG_FRAME,
  PUSHER_ERRORS,
  type PusherErrorSpec,
  type RosterMember,
  appKeyOfPath,
  authorizeSubscription,
  cacheMiss,
  catalogError,
  clientEvent,
  clientEventProblem,
  connectionEstablished,
  createSocketIdAllocator,
  errorFrame,
  memberAdded,
  memberRemoved,
  parseClientFrame,
  parseConnectQuery,
  parseUserData,
  presenceSubscriptionSucceeded,
  signinSuccess,
  subscriptionError,
  subscriptionSucceeded,
  verifyUserAuth,
} from '../../src/protocols/pusher';

/**
 * A one-process Pusher server for the frame tests: a `ws` server on port 0 that speaks only
 * through the protocol modules (parser, verifiers, builders), so a real `pusher-js` can be run
 * against what they produce. It holds channels and rosters in maps; the gateway will do the
 * same through its cluster state.
 */

export interface HarnessSocket {
  readonly ws: WebSocket;
  readonly socketId: string;
  readonly channels: Set<string>;
  userId?: string;
  /** Presence member per presence channel. */
  readonly members: Map<string, RosterMember>;
}

export interface FrameHarness {
  readonly port: number;
  readonly app: { key: string; secret: string };
  readonly sockets: HarnessSocket[];
  /** Every command parsed from every client frame, in order. */
  readonly commands: ClientCommand[];
  /** Text of every `pusher:error` frame sent because a client frame was refused. */
  readonly refusals: string[];
  /** Resolves with the next command of `type`. */
  next(type: ClientCommand['type']): Promise<ClientCommand>;
  /** Sends `frame` to every socket subscribed to `channel`. */
  broadcast(channel: string, frame: string): void;
  /** Last event per cache channel, replayed to new subscribers. */
  readonly cache: Map<string, string>;
  /** Sends a catalog error and closes with its code. */
  refuse(socket: HarnessSocket, spec: PusherErrorSpec): void;
  ping(socket: HarnessSocket): void;
  /** Resolves when `count` connections have been opened in total. */
  connections(count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFrameHarness(app: { key: string; secret: string }): Promise<FrameHarness> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const ids = createSocketIdAllocator(7);
  const sockets: HarnessSocket[] = [];
  const commands: ClientCommand[] = [];
  const refusals: string[] = [];
  const waiters: Array<{ type: ClientCommand['type']; resolve: (c: ClientCommand) => void }> = [];
  const connectionWaiters: Array<{ count: number; resolve: () => void }> = [];
  let opened = 0;
  const cache = new Map<string, string>();

  const subscribers = (channel: string): HarnessSocket[] => sockets.filter((s) => s.channels.has(channel));
  const roster = (channel: string): RosterMember[] =>
    subscribers(channel).flatMap((s) => {
      const member = s.members.get(channel);
      return member ? [member] : [];
    });
  const hasUser = (channel: string, userId: string, except: HarnessSocket): boolean =>
    subscribers(channel).some((s) => s !== except && s.members.get(channel)?.userId === userId);

  function leave(socket: HarnessSocket, channel: string): void {
    if (!socket.channels.delete(channel)) return;
    const member = socket.members.get(channel);
    socket.members.delete(channel);
    if (member && !hasUser(channel, member.userId, socket)) {
      for (const other of subscribers(channel)) other.ws.send(memberRemoved(channel, member.userId));
    }
  }

  function handle(socket: HarnessSocket, command: ClientCommand): void {
    switch (command.type) {
      case 'ping':
        socket.ws.send(PONG_FRAME);
        return;
      case 'pong':
      case 'unsubscribe':
        if (command.type === 'unsubscribe') leave(socket, command.channel);
        return;
      case 'signin': {
        const verdict = verifyUserAuth(app, {
          socketId: socket.socketId,
          auth: command.auth,
          userData: command.userData,
        });
        const user = parseUserData(command.userData);
        if (!verdict.ok || !user.ok) {
          socket.ws.send(
            errorFrame(null, verdict.ok ? (user as { message: string }).message : verdict.message),
          );
          return;
        }
        socket.userId = user.value.id;
        socket.ws.send(signinSuccess(user.value.userData));
        return;
      }
      case 'subscribe': {
        const { channel } = command;
        const check = authorizeSubscription(app, socket.socketId, command, socket.userId);
        if (!check.ok) {
          socket.ws.send(subscriptionError(channel.name, check.refusal));
          return;
        }
        if (check.member) {
          const fresh = !hasUser(channel.name, check.member.userId, socket);
          socket.members.set(channel.name, check.member);
          socket.channels.add(channel.name);
          socket.ws.send(presenceSubscriptionSucceeded(channel.name, roster(channel.name)));
          if (fresh) {
            for (const other of subscribers(channel.name))
              if (other !== socket) other.ws.send(memberAdded(channel.name, check.member));
          }
        } else {
          socket.channels.add(channel.name);
          socket.ws.send(subscriptionSucceeded(channel.name));
        }
        if (channel.cache) {
          const cached = cache.get(channel.name);
          socket.ws.send(cached ?? cacheMiss(channel.name));
        }
        return;
      }
      case 'client-event': {
        const problem = clientEventProblem(command.channel, socket.channels.has(command.channel.name), true);
        if (problem !== undefined) {
          refusals.push(problem);
          socket.ws.send(errorFrame(null, problem));
          return;
        }
        const userId =
          command.channel.kind === 'presence' ? socket.members.get(command.channel.name)?.userId : undefined;
        const frame = clientEvent(command.channel.name, command.event, command.dataJson, userId);
        for (const other of subscribers(command.channel.name)) if (other !== socket) other.ws.send(frame);
        return;
      }
    }
  }

  server.on('connection', (ws, request) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    opened += 1;
    for (const waiter of connectionWaiters.filter((w) => w.count <= opened)) waiter.resolve();
    const key = appKeyOfPath(url.pathname);
    const query = parseConnectQuery(url.search.slice(1));
    const refuseAt = (spec: PusherErrorSpec, message = spec.message): void => {
      ws.send(catalogError(spec, message));
      ws.close(spec.code, message);
    };
    if (key !== app.key) return refuseAt(PUSHER_ERRORS.APP_NOT_FOUND);
    if ('refusal' in query) return refuseAt(PUSHER_ERRORS.UNSUPPORTED_PROTOCOL, query.refusal);
    const socket: HarnessSocket = { ws, socketId: ids.next(), channels: new Set(), members: new Map() };
    sockets.push(socket);
    ws.send(connectionEstablished(socket.socketId, 120));
    ws.on('message', (data) => {
      const parsed = parseClientFrame(String(data), 65536);
      if (!parsed.ok) {
        refusals.push(parsed.message);
        ws.send(errorFrame(null, parsed.message));
        return;
      }
      commands.push(parsed.command);
      handle(socket, parsed.command);
      for (const waiter of waiters.filter((w) => w.type === parsed.command.type)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(parsed.command);
      }
    });
    ws.on('close', () => {
      for (const channel of [...socket.channels]) leave(socket, channel);
      sockets.splice(sockets.indexOf(socket), 1);
    });
  });

  return {
    port: (server.address() as AddressInfo).port,
    app,
    sockets,
    commands,
    refusals,
    cache,
    next: (type) => new Promise((resolve) => waiters.push({ type, resolve })),
    broadcast(channel, frame) {
      for (const socket of subscribers(channel)) socket.ws.send(frame);
    },
    refuse(socket, spec) {
      socket.ws.send(catalogError(spec));
      socket.ws.close(spec.code, spec.message);
    },
    ping(socket) {
      socket.ws.send(PING_FRAME);
    },
    connections: (count) =>
      new Promise((resolve) => (opened >= count ? resolve() : connectionWaiters.push({ count, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
