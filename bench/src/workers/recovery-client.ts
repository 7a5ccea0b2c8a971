import { nowUs } from '../lib/payload';
import { RawWebSocket } from '../lib/raw-ws';
import { ResumeRecorder } from '@switchboard/harness';
import type { ResumeStatus } from '@switchboard/harness';

/**
 * Client process of the `recovery` scenario: opted-in V3 sockets (`recover=1`) that follow the
 * recovery flow of docs/protocol.md. Each remembers its epoch and the offset of its latest
 * publication; on a close from 4000 to 4499 (a drain) or without a close frame (a crash) it
 * reconnects at once to `resumeUrl` with `since` and `epoch`. Driven over IPC by the harness.
 */
export type RecoveryCommand =
  | { cmd: 'connect'; urls: string[]; resumeUrls: string[]; concurrency: number; timeoutMs: number }
  | { cmd: 'status'; first: number; last: number }
  | { cmd: 'close' }
  | { cmd: 'exit' };

export interface RecoveryConnectReport {
  ok: number;
  failed: number;
  firstError?: string;
}

const clients: { state: ResumeRecorder; socket: RawWebSocket | undefined; stopping: boolean }[] = [];

function open(
  entry: (typeof clients)[number],
  url: string,
  resumeUrl: string,
  onFirstPosition?: (error?: Error) => void,
  attempt = 0,
): void {
  let positioned = false;
  const report = (error?: Error): void => {
    if (positioned) return;
    positioned = true;
    onFirstPosition?.(error);
  };
  const positionsBefore = entry.state.positions;
  const socket = new RawWebSocket(url, {
    open: () => undefined,
    message: (data) => {
      entry.state.onFrame(data.toString(), nowUs());
      if (!positioned && entry.state.positions > positionsBefore) report();
    },
    error: (error) => report(error),
    close: () => {
      const resumed = positioned;
      report(new Error(`closed before its position (code ${socket.closeCode ?? 'none'})`));
      if (entry.stopping || !entry.state.positioned) return;
      const code = socket.closeCode;
      if (code !== undefined && (code < 4000 || code > 4499)) return;
      // A reconnect that failed before its position (the node not listening yet) is retried
      // after a pause, a bounded number of times; a drained socket reconnects at once.
      if (resumed) entry.state.onReconnect(nowUs());
      const next = resumed ? 0 : attempt + 1;
      if (next > 100) return;
      const again = (): void => open(entry, entry.state.resumeUrl(resumeUrl), resumeUrl, undefined, next);
      if (next === 0) again();
      else setTimeout(again, 20);
    },
  });
  entry.socket = socket;
}

async function connectAll(
  command: Extract<RecoveryCommand, { cmd: 'connect' }>,
): Promise<RecoveryConnectReport> {
  const report: RecoveryConnectReport = { ok: 0, failed: 0 };
  let next = 0;
  const deadline = Date.now() + command.timeoutMs;
  const lane = async (): Promise<void> => {
    while (next < command.urls.length && Date.now() < deadline) {
      const i = next++;
      const entry = { state: new ResumeRecorder(), socket: undefined, stopping: false };
      clients.push(entry);
      await new Promise<void>((resolve) =>
        open(entry, command.urls[i]!, command.resumeUrls[i]!, (error) => {
          if (error) {
            report.failed++;
            report.firstError ??= error.message;
          } else report.ok++;
          resolve();
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, command.concurrency) }, lane));
  return report;
}

function status(first: number, last: number): ResumeStatus {
  return ResumeRecorder.summarize(
    clients.map((c) => c.state),
    first,
    last,
  );
}

process.on('message', (command: RecoveryCommand) => {
  switch (command.cmd) {
    case 'connect':
      void connectAll(command).then((report) => process.send?.({ cmd: 'connected', report }));
      break;
    case 'status':
      process.send?.({ cmd: 'status', status: status(command.first, command.last) });
      break;
    case 'close':
      for (const c of clients) {
        c.stopping = true;
        c.socket?.terminate();
      }
      process.send?.({ cmd: 'closed' });
      break;
    case 'exit':
      process.exit(0);
  }
});
