import type Pusher from 'pusher';
import PusherJs from 'pusher-js';
import type { Options } from 'pusher-js';
import type { default as EchoClass } from 'laravel-echo' with { 'resolution-mode': 'import' };

export interface LocalPusherJsOptions {
  key: string;
  /** The gateway's (or harness's) port on 127.0.0.1, spoken to over plain `ws`. */
  port: number;
  /** The app backend: the `pusher` server SDK that signs channel authorization. */
  signer: Pusher;
  /** The member presence channels are authorized for. */
  presence: Pusher.PresenceChannelData;
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
          channelName.startsWith('presence-')
            ? signer.authorizeChannel(socketId, channelName, presence)
            : signer.authorizeChannel(socketId, channelName),
        ),
    },
    ...(options.userAuthentication ? { userAuthentication: options.userAuthentication } : {}),
  });
}

/**
 * Laravel Echo over the server, the part two tests share: `ada` whispers on the private channel
 * `chat` and `bob` hears it; then on the presence channel `room.1` (users `{ name: 'Ada' }` and
 * `{ name: 'Bob' }`) `ada` is alone, sees `bob` join, `bob` sees both, and `ada` sees `bob` leave.
 */
export async function expectEchoWhisperAndPresence(
  ada: EchoClass<'pusher'>,
  bob: EchoClass<'pusher'>,
): Promise<void> {
  const subscribedVia = (channel: { subscribed(callback: () => void): unknown }): Promise<void> =>
    new Promise((resolve) => channel.subscribed(() => resolve()));

  const typing = new Promise<unknown>((resolve) => bob.private('chat').listenForWhisper('typing', resolve));
  await Promise.all([subscribedVia(ada.private('chat')), subscribedVia(bob.private('chat'))]);
  ada.private('chat').whisper('typing', { name: 'Ada' });
  expect(await typing).toEqual({ name: 'Ada' });

  const here = new Promise<unknown>((resolve) => ada.join('room.1').here(resolve));
  expect(await here).toEqual([{ name: 'Ada' }]);
  const joining = new Promise<unknown>((resolve) => ada.join('room.1').joining(resolve));
  const leaving = new Promise<unknown>((resolve) => ada.join('room.1').leaving(resolve));
  const bobHere = new Promise<unknown[]>((resolve) => bob.join('room.1').here(resolve));
  expect(await joining).toEqual({ name: 'Bob' });
  expect((await bobHere).length).toBe(2);
  bob.leave('room.1');
  expect(await leaving).toEqual({ name: 'Bob' });
}
