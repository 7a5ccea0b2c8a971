import WebSocket from 'ws';
import { createUwsTransport } from '../src/transport/uws';
import { fillFreedMemoryInOpen } from '@switchboard/testing';
import type { Conn, Transport } from '../src/transport/types';

/**
 * Upgrades decided late (docs/architecture.md, "Upgrades that wait"). uWebSockets.js 20.30's and
 * 20.57's `res.cork` closes a socket it upgraded when the memory the upgrade gave up holds the
 * HTTP "connection: close" flag by the time the cork ends. The test makes that certain instead of
 * rare: uWS's `open` of every socket first allocates buffers filled with 0x10 (that flag, without
 * "response pending"), by wrapping the `App` of the module the transport loads, so one of them
 * lands in that memory whenever `open` runs inside such a cork.
 */

describe('late upgrades', () => {
  let restore: () => void;
  let transport: Transport;
  const counts = { opened: 0, lost: 0 };
  const openConns = new Set<Conn>();

  beforeAll(() => {
    restore = fillFreedMemoryInOpen(50);
    transport = createUwsTransport<{ readonly id: number }>(
      {
        refuseUpgrade: () => undefined,
        // Decided in a later turn of Node's loop, as after a Redis reply.
        upgrade: () => new Promise((resolve) => setImmediate(() => resolve({ id: counts.opened }))),
        upgradeAborted: () => undefined,
        upgradeLost: () => {
          counts.lost++;
        },
        open: (conn) => {
          openConns.add(conn);
          counts.opened++;
          conn.send('hello');
        },
        message: () => undefined,
        drain: () => undefined,
        close: (conn) => {
          openConns.delete(conn);
        },
        // The open sockets, as the gateway's registry knows them: the transport keeps none itself.
        anotherOpen: (except) => [...openConns].find((conn) => conn !== except),
        http: () => ({ status: 404, body: '' }),
        bodyTooLarge: () => ({ status: 413, body: '' }),
      },
      {
        maxFrameBytes: 1024,
        maxBodyBytes: 1024,
        idleTimeoutSeconds: 60,
        maxBackpressureBytes: 64 * 1024,
        readForwardedFor: false,
      },
    );
  });

  afterAll(() => {
    transport.close();
    restore();
  });

  /** Opens a client and waits for the frame sent in `open`; `done` closes it and resolves the close code. */
  const connect = (url: string): Promise<{ greeted: boolean; done: () => Promise<number> }> =>
    new Promise((resolve) => {
      const ws = new WebSocket(url);
      const closed = new Promise<number>((resolveClose) => ws.on('close', resolveClose));
      const done = (): Promise<number> => {
        ws.close(1000);
        return closed;
      };
      ws.on('message', () => resolve({ greeted: true, done }));
      ws.on('error', () => undefined);
      void closed.then(() => resolve({ greeted: false, done }));
    });

  it('keeps every socket it upgraded late open, the first one of the process included', async () => {
    const port = await transport.listen('127.0.0.1', 0);
    const url = `ws://127.0.0.1:${port}/late`;
    // Alone: no other socket is open while it upgrades (`res.upgrade` bare).
    const first = await connect(url);
    expect(first.greeted).toBe(true);
    // Then 400 more, 50 at a time, each completed in the cork of another open socket: a client
    // closes once the next one of its worker was greeted, and the first one closes midway, so
    // other sockets take its place.
    const failures: string[] = [];
    const check = (greeted: boolean, code: number): void => {
      if (!greeted || code !== 1000) failures.push(`greeted ${greeted}, closed ${code}`);
    };
    let started = 0;
    const worker = async (): Promise<void> => {
      let previous: Awaited<ReturnType<typeof connect>> | undefined;
      while (started < 400) {
        if (++started === 100) check(first.greeted, await first.done());
        const client = await connect(url);
        if (previous) check(previous.greeted, await previous.done());
        previous = client;
      }
      if (previous) check(previous.greeted, await previous.done());
    };
    await Promise.all(Array.from({ length: 50 }, worker));
    expect(failures).toEqual([]);
    expect(counts).toEqual({ opened: 401, lost: 0 });
  });
});
