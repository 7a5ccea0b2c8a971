import WebSocket from 'ws';
import { createTestKey } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { Switchboard } from '../../src';
import type { Channel, Publication, SwitchboardOptions } from '../../src';
import type { Emitter, Handler } from '../../src/emitter';

/**
 * The `ws` client, as the Switchboard client gets it in Node 20, plus a record of every socket
 * it opens (URL, close): tests count sockets and read the query the client sent.
 */
export class RecordingWebSocket extends WebSocket {
  static readonly opened: RecordingWebSocket[] = [];
  /** When the client created the socket (`Date.now()`). */
  readonly createdAt = Date.now();
  readonly closeEvent: Promise<{ code: number; reason: string }>;

  constructor(address: string) {
    super(address);
    RecordingWebSocket.opened.push(this);
    this.closeEvent = new Promise((resolve) =>
      this.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  get query(): URLSearchParams {
    return new URL(this.url).searchParams;
  }
}

/** Every client a test made, closed after it. */
const clients: Switchboard[] = [];

export function newClient(options: Omit<SwitchboardOptions, 'WebSocket'>): Switchboard {
  const client = new Switchboard({ WebSocket: RecordingWebSocket, ...options });
  clients.push(client);
  return client;
}

/**
 * A client on a new API key whose client messages are disabled (the server refuses every publish),
 * its channels `home` (subscribed first) and `side` both ready.
 */
export async function refusingClient(
  engine: TestGateway['engine'],
  options: { url: string; protocol: 3 | 4; home: string; side: string },
): Promise<{ sb: Switchboard; room: Channel; side: Channel }> {
  const quiet = await createTestKey(engine, { clientMessages: false });
  const sb = newClient({ url: options.url, apiKey: quiet.key, protocol: options.protocol });
  const room = sb.channel(options.home);
  const side = sb.channel(options.side);
  await Promise.all([room.ready(), side.ready()]);
  return { sb, room, side };
}

export function closeClients(): void {
  for (const client of clients.splice(0)) client.close();
}

/** Resolves with the next `(data, meta, publication)` of `event` on `channel` that matches. */
export function nextPublication(
  channel: Channel,
  event: string,
  match: (data: unknown) => boolean = () => true,
  timeoutMs = 5000,
): Promise<{ data: unknown; meta: unknown; publication: Publication }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no "${event}" on ${channel.name} within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = channel.on(event, (data, meta, publication) => {
      if (!match(data)) return;
      clearTimeout(timer);
      off();
      resolve({ data, meta, publication });
    });
  });
}

/** Resolves with the arguments of the next emission of `event` (a lifecycle event). */
export function nextEvent<T extends unknown[]>(
  target: Emitter,
  event: string,
  match: (...args: T) => boolean = () => true,
  timeoutMs = 5000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no "${event}" within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = target.on(event, ((...args: T) => {
      if (!match(...args)) return;
      clearTimeout(timer);
      off();
      resolve(args);
    }) as Handler);
  });
}
