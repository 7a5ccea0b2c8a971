/**
 * A joining socket's member events may overtake its `system::member_list` (docs/protocol.md,
 * "Presence"): the client holds them and applies them after the list, so its members are the
 * server's whichever came first. A scripted server sends the frames in the overtaking order.
 */
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import type { Member } from '../src';
import { closeClients, newClient, nextEvent } from './support/helpers';

let server: WebSocketServer;
let script: (socket: WebSocket) => void;

beforeEach(async () => {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  server.on('connection', (socket) => script(socket));
});

afterEach(async () => {
  closeClients();
  for (const socket of server.clients) socket.terminate();
  await new Promise((resolve) => server.close(resolve));
});

const url = (): string => `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
const event = (name: string, data: Record<string, unknown>): string =>
  JSON.stringify({ event: name, data: { channel: 'room', ...data }, 'system::channel': 'room' });
const users = (members: readonly Member[]): unknown[] => members.map((m) => m.user).sort();

describe('presence events before the member list (V4)', () => {
  it('applies them after the list: a leave the list predates removes the member', async () => {
    script = (socket) => {
      // carol left after the join's snapshot (still in the list); dave joined before it (in the list too).
      socket.send(event('system::member_left', { member: { uuid: 'c', user: 'carol' }, count: 2 }));
      socket.send(event('system::member_joined', { member: { uuid: 'd', user: 'dave' }, count: 3 }));
      socket.send(
        event('system::member_list', {
          members: [
            { uuid: 'a', user: 'alice' },
            { uuid: 'c', user: 'carol' },
            { uuid: 'd', user: 'dave' },
          ],
          count: 3,
        }),
      );
      socket.send(event('system::member_joined', { member: { uuid: 'e', user: 'erin' }, count: 3 }));
    };
    const client = newClient({ url: url(), apiKey: 'k', user: 'alice', recover: false });
    const room = client.channel('room', { presence: true });
    const order: string[] = [];
    room.on('members', () => order.push('members'));
    room.on('member_joined', (member) => order.push(`+${String(member.user)}`));
    room.on('member_left', (member) => order.push(`-${String(member.user)}`));
    await nextEvent(room, 'member_joined', (member: Member) => member.user === 'erin');
    expect(order).toEqual(['members', '-carol', '+dave', '+erin']);
    expect(users(room.members)).toEqual(['alice', 'dave', 'erin']);
  });

  it('holds them again after a reconnect, until the new list', async () => {
    let connection = 0;
    script = (socket) => {
      connection++;
      if (connection === 1) {
        socket.send(event('system::member_list', { members: [{ uuid: 'b', user: 'bob' }], count: 1 }));
        socket.close(4000, 'Server restarting, reconnect');
        return;
      }
      socket.send(event('system::member_left', { member: { uuid: 'b', user: 'bob' }, count: 1 }));
      socket.send(
        event('system::member_list', {
          members: [
            { uuid: 'a', user: 'alice' },
            { uuid: 'b', user: 'bob' },
          ],
          count: 2,
        }),
      );
    };
    const client = newClient({
      url: url(),
      apiKey: 'k',
      user: 'alice',
      recover: false,
      backoff: { baseMs: 1, capMs: 5 },
    });
    const room = client.channel('room', { presence: true });
    await nextEvent(room, 'member_left', (member: Member) => member.user === 'bob', 10_000);
    expect(users(room.members)).toEqual(['alice']);
  });

  it('applies them at once on a channel without presence (no member list comes)', async () => {
    script = (socket) => {
      socket.send(event('system::member_joined', { member: { uuid: 'b', user: 'bob' }, count: 1 }));
    };
    const client = newClient({ url: url(), apiKey: 'k', recover: false });
    const room = client.channel('room');
    await nextEvent(room, 'member_joined');
    expect(users(room.members)).toEqual(['bob']);
  });
});
