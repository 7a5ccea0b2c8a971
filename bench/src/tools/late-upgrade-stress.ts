import { loadUws } from '@switchboard/gateway';
import { fillFreedMemoryInOpen } from '@switchboard/testing';
import { createUwsTransport } from '@switchboard/gateway/dist/transport/uws';
import type { Conn } from '@switchboard/gateway/dist/transport/types';
import WebSocket from 'ws';

/**
 * Stresses upgrades decided late, the path of uWebSockets.js that could close a socket right after
 * its `101` (docs/architecture.md, "Upgrades that wait"), through the gateway's own transport.
 *
 *   npm run bench:late-upgrades [-- --connections N --concurrency N --pool N --window-churn N]
 *
 * Every upgrade is decided asynchronously (half after a `setImmediate`, half after a resolved
 * promise), and between the handshake and its completion the process churns native memory: it
 * replaces ArrayBuffers of 16 to 512 bytes (their backing stores come from malloc, the heap the
 * upgraded socket's memory lives in) in a pool of `pool`. `concurrency` clients over loopback, in
 * this process, open `connections` WebSockets in all; each waits for the frame the server sends in
 * `open`, then closes with 1000. Counted: sockets the transport reports lost (`upgradeLost`),
 * clients closed with 1006 after their `101` (the symptom), failed handshakes, and opens. Prints
 * one JSON line; exits 1 when any socket was lost or closed abruptly.
 *
 * `window-churn` N > 0 makes the bug's window visible: uWS's `open` of every socket first
 * allocates N buffers of 16 to 408 bytes from malloc, each filled with 0x10 (the "connection:
 * close" flag without "response pending"), so one of them lands in the memory a socket gave up
 * when it was upgraded. Under a `res.cork` that corked the upgrading socket, `open` runs between
 * the upgrade and the read of that flag, as the gateway's own `open` once did: with
 * `--window-churn 50` nearly every upgrade completed through a `setImmediate` was closed on that
 * path, and none is on the transport's (the cork of another socket).
 */

interface Options {
  readonly connections: number;
  readonly concurrency: number;
  readonly pool: number;
  readonly windowChurn: number;
}

function parseOptions(argv: readonly string[]): Options {
  const options = { connections: 20_000, concurrency: 200, pool: 4_000, windowChurn: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]?.replace(/^--/, '').replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase());
    const value = Number(argv[i + 1]);
    if (!name || !(name in options) || !Number.isInteger(value) || value < (name === 'windowChurn' ? 0 : 1)) {
      throw new Error(`Unknown or bad option ${argv[i]} ${argv[i + 1] ?? ''}`.trim());
    }
    options[name as keyof typeof options] = value;
  }
  return options;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.windowChurn) fillFreedMemoryInOpen(options.windowChurn);
  const pool: ArrayBuffer[] = Array.from({ length: options.pool }, () => new ArrayBuffer(16));
  const churn = (rounds: number): void => {
    for (let i = 0; i < rounds; i++) {
      const size = 16 + Math.floor(Math.random() * 497);
      pool[Math.floor(Math.random() * pool.length)] = new ArrayBuffer(size);
    }
  };

  const counts = { opened: 0, lost: 0, closedAbruptly: 0, failedHandshakes: 0, done: 0 };
  const openConns = new Set<Conn>();
  let decided = 0;
  const transport = createUwsTransport<{ readonly id: number }>(
    {
      refuseUpgrade: () => undefined,
      upgrade: () => {
        const id = decided++;
        const data = { id };
        churn(8);
        if (id % 2 === 0) {
          return new Promise((resolve) =>
            setImmediate(() => {
              churn(8);
              resolve(data);
            }),
          );
        }
        return Promise.resolve().then(() => {
          churn(8);
          return data;
        });
      },
      upgradeAborted: () => undefined,
      upgradeLost: () => {
        counts.lost++;
      },
      open: (conn: Conn) => {
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
      maxFrameBytes: 64 * 1024,
      maxBodyBytes: 1024,
      idleTimeoutSeconds: 60,
      maxBackpressureBytes: 1024 * 1024,
      readForwardedFor: false,
    },
  );
  const port = await transport.listen('127.0.0.1', 0);
  const url = `ws://127.0.0.1:${port}/stress`;
  const started = process.hrtime.bigint();

  let next = 0;
  const client = (): Promise<void> =>
    new Promise((resolve) => {
      const ws = new WebSocket(url);
      let upgraded = false;
      ws.on('upgrade', () => {
        upgraded = true;
      });
      ws.on('message', () => ws.close(1000));
      ws.on('error', () => undefined);
      ws.on('close', (code) => {
        if (!upgraded) counts.failedHandshakes++;
        else if (code === 1006) counts.closedAbruptly++;
        counts.done++;
        resolve();
      });
    });
  const worker = async (): Promise<void> => {
    while (next < options.connections) {
      next++;
      await client();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  transport.close();

  const { lost, closedAbruptly, failedHandshakes, opened } = counts;
  console.log(
    JSON.stringify({
      node: process.version,
      uws: loadUws().from,
      connections: options.connections,
      concurrency: options.concurrency,
      windowChurn: options.windowChurn,
      opened,
      lost,
      closedAbruptly,
      failedHandshakes,
      seconds: Math.round(seconds * 10) / 10,
    }),
  );
  process.exitCode = lost || closedAbruptly || failedHandshakes ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 2;
});
