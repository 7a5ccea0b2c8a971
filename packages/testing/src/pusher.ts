import Pusher from 'pusher';
import PusherJs from 'pusher-js';
import type { Channel, Options } from 'pusher-js';
import type { ApiKeyRecord } from '@switchboard/core';
import type { TestClient } from './ws-client';

/**
 * Pusher protocol fixtures (docs/pusher.md): the `pusher` server SDK as the app's backend, the
 * `pusher-js` client, and the steps a raw Pusher socket takes before a test's own frames.
 */

/** What the fixtures need of a key: its key (also the Pusher app id) and secret. */
export type PusherApp = Pick<ApiKeyRecord, 'key' | 'secret'>;

/** Options of the backend other than the app's own. */
export interface PusherBackendOptions {
  /** Another app id than the key (Switchboard takes the key as the app id). */
  appId?: string;
  /** Sign with this secret instead of the app's (a broken backend). */
  secret?: string;
  /** The master key end-to-end encrypted channels derive their secrets from. */
  encryptionMasterKeyBase64?: string;
}

/**
 * The app's backend: the `pusher` server SDK pointed at `http://127.0.0.1:<port>` (a gateway's,
 * or a load balancer's), signing with the app's secret.
 */
export function pusherBackend(app: PusherApp, port: number, options: PusherBackendOptions = {}): Pusher {
  return new Pusher({
    ...(options.encryptionMasterKeyBase64
      ? { encryptionMasterKeyBase64: options.encryptionMasterKeyBase64 }
      : {}),
    appId: options.appId ?? app.key,
    key: app.key,
    secret: options.secret ?? app.secret,
    host: '127.0.0.1',
    port: String(port),
    useTLS: false,
  });
}

/** The URL of a raw Pusher socket (protocol 7) for `key` on `127.0.0.1:<port>`. */
export const pusherSocketUrl = (port: number, key: string): string =>
  `ws://127.0.0.1:${port}/app/${key}?protocol=7`;

/** Awaits a raw socket's `pusher:connection_established` and returns the socket id it gives. */
export async function pusherSocketId(client: TestClient): Promise<string> {
  const established = await client.nextEvent('pusher:connection_established');
  return (JSON.parse(established.json?.['data'] as string) as { socket_id: string }).socket_id;
}

/**
 * Signs a raw socket in as `user` (`pusher:signin` with the backend's `authenticateUser`), as
 * pusher-js signs in, and awaits its `pusher:signin_success`.
 */
export async function signInPusherSocket(
  client: TestClient,
  backend: Pusher,
  user: Pusher.UserChannelData,
): Promise<void> {
  const { auth, user_data } = backend.authenticateUser(await pusherSocketId(client), user);
  client.send({ event: 'pusher:signin', data: { auth, user_data } });
  await client.nextEvent('pusher:signin_success');
}

export interface LocalPusherJsOptions {
  key: string;
  /** The gateway's (or harness's) port on 127.0.0.1, spoken to over plain `ws`. */
  port: number;
  /** The app backend: the `pusher` server SDK that signs channel authorization. */
  signer: Pusher;
  /** The member presence channels are authorized for (a test without one joins none). */
  presence?: Pusher.PresenceChannelData;
  /** The user authentication (signin) endpoint, where a test needs one. */
  userAuthentication?: Options['userAuthentication'];
}

/**
 * A pusher-js client (it starts connecting at once) whose channel authorization endpoint is the
 * `pusher` server SDK answering in process, as an app backend's endpoint would.
 */
export function localPusherJs(options: LocalPusherJsOptions): PusherJs {
  const { signer, presence } = options;
  return new PusherJs(options.key, {
    cluster: 'local',
    wsHost: '127.0.0.1',
    wsPort: options.port,
    forceTLS: false,
    enabledTransports: ['ws'],
    channelAuthorization: {
      endpoint: '/unused',
      transport: 'ajax',
      customHandler: ({ socketId, channelName }, callback) =>
        callback(
          null,
          channelName.startsWith('presence-') && presence
            ? signer.authorizeChannel(socketId, channelName, presence)
            : signer.authorizeChannel(socketId, channelName),
        ),
    },
    ...(options.userAuthentication ? { userAuthentication: options.userAuthentication } : {}),
  });
}

/** Resolves once the client is connected; rejects if pusher-js gives up (`failed`). */
export const pusherJsConnected = (client: PusherJs): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    client.connection.bind('connected', () => resolve());
    client.connection.bind('failed', () => reject(new Error('pusher-js failed to connect')));
  });

/** Subscribes and resolves with the channel once subscribed; rejects on `pusher:subscription_error`. */
export function pusherJsSubscribed<T extends Channel = Channel>(client: PusherJs, name: string): Promise<T> {
  const channel = client.subscribe(name) as T;
  return new Promise((resolve, reject) => {
    channel.bind('pusher:subscription_succeeded', () => resolve(channel));
    channel.bind('pusher:subscription_error', (error: unknown) =>
      reject(new Error(`subscription error: ${JSON.stringify(error)}`)),
    );
  });
}

/** The next `event` the channel receives, with its data. */
export const nextPusherEvent = (channel: Channel, event: string): Promise<unknown> =>
  new Promise((resolve) => {
    const handler = (data: unknown): void => {
      channel.unbind(event, handler);
      resolve(data);
    };
    channel.bind(event, handler);
  });
