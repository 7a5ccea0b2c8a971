import type { default as EchoClass } from 'laravel-echo' with { 'resolution-mode': 'import' };

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
