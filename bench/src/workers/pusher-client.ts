import { BUCKETS, bucketOf, toSparse } from '../lib/hist';
import { nowUs } from '../lib/payload';
import { KEY, SECRET } from '../lib/procs';
import { PusherSubscriber } from '../lib/pusher-subscriber';
import type { ClientCommand, ConnectReport, StatsReport } from './client';

/**
 * Pusher-protocol client process: the same IPC commands and reports as workers/client.ts (so
 * `ClientFleet` drives it and results compare), over Pusher subscribers. Each `connect` address is
 * `ws://…/app/{key}?protocol=7#channel`; a connection counts as open (and joined) once its
 * subscription succeeded. Every wait is bounded: a subscriber that is not subscribed within
 * the command's time (at most 10 s each) fails with the reason.
 */
const subscribers: PusherSubscriber[] = [];
let hist = new Uint32Array(BUCKETS);
let early = new Uint32Array(BUCKETS);
let late = new Uint32Array(BUCKETS);
let quarter = 0;
let lastQuarter = Infinity;
let received = 0;
let other = 0;
let closed = 0;
/** Presence members' user ids: unique across the client processes. */
let members = 0;

/** Longest wait for one subscriber's handshake and subscription. */
const SUBSCRIBE_TIMEOUT_MS = 10_000;

const reply = (message: object): void => void process.send?.(message);

function delivery(t: number, seq: number): void {
  received++;
  const bucket = bucketOf(nowUs() - t);
  hist[bucket]!++;
  if (seq < quarter) early[bucket]!++;
  else if (seq >= lastQuarter) late[bucket]!++;
}

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
          delivery,
          other: () => void other++,
          closed: () => void closed++,
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

process.on('message', (command: ClientCommand) => {
  switch (command.cmd) {
    case 'connect':
      void connectAll(command).then((report) => reply({ cmd: 'connected', report }));
      break;
    case 'reset':
      hist = new Uint32Array(BUCKETS);
      early = new Uint32Array(BUCKETS);
      late = new Uint32Array(BUCKETS);
      quarter = Math.floor(command.publishes / 4);
      lastQuarter = command.publishes - quarter;
      received = 0;
      other = 0;
      closed = 0;
      reply({ cmd: 'reset' });
      break;
    case 'stats': {
      const stats: StatsReport = {
        received,
        other,
        closed,
        down: subscribers.reduce((n, s) => (s.done ? n + 1 : n), 0),
        hist: toSparse(hist),
        early: toSparse(early),
        late: toSparse(late),
      };
      reply({ cmd: 'stats', stats });
      break;
    }
    case 'close':
      void closeAll(command.timeoutMs).then((count) => reply({ cmd: 'closed', count }));
      break;
    case 'exit':
      process.exit(0);
  }
});
