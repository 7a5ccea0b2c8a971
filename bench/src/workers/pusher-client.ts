import { nowUs } from '../lib/payload';
import { KEY, SECRET } from '../lib/procs';
import { PusherSubscriber } from '../lib/pusher-subscriber';
import { type ClientCommand, type ConnectReport, recorder, serveClientCommands } from './client-worker';

/**
 * Pusher-protocol client process: the same IPC commands, reports and counters as
 * workers/client.ts (both from client-worker.ts, so `ClientFleet` drives it and results compare),
 * over Pusher subscribers. Each `connect` address is `ws://…/app/{key}?protocol=7#channel`; a
 * connection counts as open (and joined) once its subscription succeeded. Every wait is bounded:
 * a subscriber that is not subscribed within the command's time (at most 10 s each) fails with
 * the reason.
 */
const subscribers: PusherSubscriber[] = [];
/** Presence members' user ids: unique across the client processes. */
let members = 0;

/** Longest wait for one subscriber's handshake and subscription. */
const SUBSCRIBE_TIMEOUT_MS = 10_000;

async function connectAll(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<ConnectReport> {
  const startUs = nowUs();
  // Open and join times start at the start: with nothing subscribed they read 0 s.
  const report: ConnectReport = {
    ok: 0,
    failed: 0,
    startUs,
    lastOpenUs: startUs,
    joined: 0,
    lastJoinUs: startUs,
  };
  const deadline = Date.now() + command.timeoutMs;
  let next = 0;
  const one = (address: string): Promise<void> =>
    new Promise((resolve) => {
      const subscriber = new PusherSubscriber(
        address,
        {
          settled: (error) => {
            if (error) {
              report.failed++;
              report.firstError ??= error;
            } else {
              report.ok++;
              report.joined++;
              report.lastOpenUs = report.lastJoinUs = nowUs();
            }
            resolve();
          },
          delivery: recorder.delivery,
          other: recorder.other,
          closed: recorder.closed,
        },
        {
          client: command.client,
          credentials: { key: KEY, secret: SECRET, userId: `u-${process.pid}-${members++}` },
          timeoutMs: Math.max(1, Math.min(SUBSCRIBE_TIMEOUT_MS, deadline - Date.now())),
        },
      );
      subscribers.push(subscriber);
    });
  const lane = async (): Promise<void> => {
    // After the first failure the rest would most likely fail the same way: stop early.
    while (next < command.urls.length && Date.now() < deadline && report.failed === 0)
      await one(command.urls[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, command.concurrency) }, lane));
  report.failed = Math.max(report.failed, command.urls.length - report.ok);
  return report;
}

// pusher-js pings after its activity timeout without traffic; so do these subscribers.
setInterval(() => {
  const now = performance.now();
  for (const s of subscribers) s.keepAlive(now);
}, 5000).unref();

async function closeAll(timeoutMs: number): Promise<number> {
  const all = subscribers.splice(0);
  for (const s of all) s.terminate();
  const deadline = Date.now() + timeoutMs;
  while (all.some((s) => !s.done) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return all.length;
}

serveClientCommands({
  connectAll,
  closeAll,
  down: () => subscribers.reduce((n, s) => (s.done ? n + 1 : n), 0),
});
