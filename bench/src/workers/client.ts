import WebSocket from 'ws';
import { nowUs, seqOf, timestampOf } from '../lib/payload';
import { RawWebSocket } from '../lib/raw-ws';
import { type ClientCommand, type ConnectReport, recorder, serveClientCommands } from './client-worker';

/**
 * Client process: holds many WebSocket connections (`ws`, no compression), counts benchmark
 * payloads and records publish-to-receive latency in a fixed histogram. Driven over IPC by the
 * harness; every wait is bounded.
 */
export type { ClientCommand, ConnectReport, StatsReport } from './client-worker';

interface Connection {
  terminate(): void;
  readonly done: boolean;
  onClosed(cb: () => void): void;
}

const sockets: Connection[] = [];

async function connectAll(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<ConnectReport> {
  const report: ConnectReport = {
    ok: 0,
    failed: 0,
    startUs: nowUs(),
    lastOpenUs: 0,
    joined: 0,
    lastJoinUs: 0,
  };
  const marker = command.joinMarker ? Buffer.from(command.joinMarker) : undefined;
  let next = 0;
  const deadline = Date.now() + command.timeoutMs;
  const one = (url: string): Promise<void> =>
    new Promise((resolve) => {
      let settled = false;
      let joined = !marker;
      let opened = false;
      const closeWaiters: (() => void)[] = [];
      const settle = (): void => {
        if (settled) return;
        settled = true;
        resolve();
      };
      const onOpen = (): void => {
        opened = true;
        report.ok++;
        report.lastOpenUs = nowUs();
        if (joined) settle();
      };
      const onMessage = (data: Buffer): void => {
        const t = timestampOf(data);
        if (t >= 0) {
          recorder.delivery(t, seqOf(data));
          return;
        }
        recorder.other();
        if (!joined && marker && data.includes(marker)) {
          joined = true;
          report.joined++;
          report.lastJoinUs = nowUs();
          settle();
        }
      };
      const onError = (error: Error): void => {
        if (!settled && !opened) {
          report.failed++;
          report.firstError ??= error.message;
        }
        settle();
      };
      const onClose = (): void => {
        recorder.closed();
        settle();
        for (const cb of closeWaiters.splice(0)) cb();
      };
      if (command.client === 'raw') {
        const ws = new RawWebSocket(url, {
          open: onOpen,
          message: onMessage,
          error: onError,
          close: onClose,
        });
        sockets.push({
          terminate: () => ws.terminate(),
          get done() {
            return ws.closed;
          },
          onClosed: (cb) => closeWaiters.push(cb),
        });
      } else {
        const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: command.timeoutMs });
        ws.on('open', onOpen);
        ws.on('message', onMessage);
        ws.on('error', onError);
        ws.on('close', onClose);
        sockets.push({
          terminate: () => ws.terminate(),
          get done() {
            return ws.readyState === WebSocket.CLOSED;
          },
          onClosed: (cb) => closeWaiters.push(cb),
        });
      }
    });
  const lane = async (): Promise<void> => {
    while (next < command.urls.length && Date.now() < deadline) await one(command.urls[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, command.concurrency) }, lane));
  report.failed = Math.max(0, command.urls.length - report.ok);
  return report;
}

async function closeAll(timeoutMs: number): Promise<number> {
  const all = sockets.splice(0);
  const deadline = Date.now() + timeoutMs;
  const waits = all.map(
    (ws) =>
      new Promise<void>((resolve) => {
        if (ws.done) return resolve();
        ws.onClosed(resolve);
        ws.terminate();
      }),
  );
  await Promise.race([
    Promise.all(waits),
    new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()))),
  ]);
  return all.length;
}

serveClientCommands({
  connectAll,
  closeAll,
  down: () => sockets.reduce((n, ws) => (ws.done ? n + 1 : n), 0),
});
