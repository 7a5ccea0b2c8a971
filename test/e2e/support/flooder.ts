import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** What a flooder process did so far (cumulative). */
export interface FloodStats {
  /** REST publishes sent and their answers by status ("200", "429"…, "error" for a failed request). */
  readonly rest: { sent: number; byStatus: Record<string, number> };
  /** Client-message sockets: opened, frames sent, error frames received, closes by code. */
  readonly ws: { opened: number; sent: number; errorFrames: number; closes: Record<string, number> };
  /** Requests and sockets still in flight (0 and 0 once a pause has taken effect). */
  readonly inFlight: number;
  readonly openSockets: number;
}

export interface FloodOptions {
  /** Gateways to flood, `http://127.0.0.1:<port>`; requests and sockets alternate over them. */
  readonly gateways: readonly string[];
  readonly key: string;
  readonly secret: string;
  readonly channel: string;
  /** REST publishes attempted per second at most (keep-alive connections, one request in flight each). */
  readonly restPerSecond: number;
  readonly restConnections: number;
  /** Client-message sockets kept open (each reopened when the gateway closes it). */
  readonly sockets: number;
  /** Frames each socket sends as soon as it is open, and again every 10 ms while it stays open. */
  readonly framesPerBurst: number;
  /** New sockets per second at most (the handshakes are the flood's most expensive part). */
  readonly connectsPerSecond: number;
}

/**
 * The flooder's program, run by a separate `node` (so its CPU is another process's, as a real
 * tenant's would be): plain JavaScript on node:http and `ws`, paused and resumed over IPC
 * (`{flood: boolean}`), reporting `FloodStats` as a JSON line on `{stats: true}`.
 */
const PROGRAM = String.raw`
const net = require('node:net');
const WebSocket = require('ws');
const o = JSON.parse(process.env.FLOOD_OPTIONS);
const stats = { rest: { sent: 0, byStatus: {} }, ws: { opened: 0, sent: 0, errorFrames: 0, closes: {} }, inFlight: 0, openSockets: 0 };
let on = false;
let restBudget = 0;
let connectBudget = 0;
const waiting = [];
setInterval(() => {
  restBudget = Math.ceil(o.restPerSecond / 20);
  connectBudget = Math.ceil(o.connectsPerSecond / 20);
  for (const wake of waiting.splice(0)) wake();
}, 50);
const tick = () => new Promise((resolve) => waiting.push(resolve));
const body = JSON.stringify({ key: o.key, secret: o.secret, channel: o.channel, message: 'flood' });
const count = (into, name) => { into[name] = (into[name] || 0) + 1; };
// Raw keep-alive HTTP/1.1 (one request in flight per connection): the same request bytes every
// time, and answers told apart by their status lines, so the flooder's own CPU stays small.
async function restWorker(i) {
  const url = new URL(o.gateways[i % o.gateways.length]);
  const request = Buffer.from('POST /api/publish HTTP/1.1\r\nHost: ' + url.host + '\r\nContent-Type: application/json\r\nContent-Length: ' + Buffer.byteLength(body) + '\r\n\r\n' + body);
  for (;;) {
    while (!on) await tick();
    await new Promise((closed) => {
      const socket = net.connect(Number(url.port), url.hostname);
      socket.setNoDelay(true);
      let answered = null;
      const send = async () => {
        while (on && restBudget <= 0) await tick();
        if (!on) return socket.end();
        restBudget -= 1;
        stats.rest.sent += 1;
        stats.inFlight += 1;
        answered = () => { stats.inFlight -= 1; answered = null; void send(); };
        socket.write(request);
      };
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
        for (;;) {
          const head = text.indexOf('HTTP/1.1 ');
          const end = head < 0 ? -1 : text.indexOf('\r\n\r\n', head);
          if (end < 0) break;
          const status = text.slice(head + 9, head + 12);
          const length = /content-length: *(\d+)/i.exec(text.slice(head, end));
          const total = end + 4 + (length ? Number(length[1]) : 0);
          if (text.length < total) break;
          text = text.slice(total);
          count(stats.rest.byStatus, status);
          if (answered) answered();
        }
      });
      socket.on('connect', () => void send());
      socket.on('error', () => count(stats.rest.byStatus, 'error'));
      socket.on('close', () => { if (answered) { stats.inFlight -= 1; } closed(); });
    });
  }
}
async function socketWorker(i) {
  const base = o.gateways[i % o.gateways.length].replace('http', 'ws');
  for (;;) {
    while (!on || connectBudget <= 0) await tick();
    connectBudget -= 1;
    stats.openSockets += 1;
    await new Promise((resolve) => {
      const ws = new WebSocket(base + '/v3/' + o.channel + '?api_key=' + o.key);
      let timer;
      const burst = () => {
        if (ws.readyState !== WebSocket.OPEN) return;
        for (let n = 0; n < o.framesPerBurst; n++) {
          ws.send(JSON.stringify({ event: 'flood', data: n }));
          stats.ws.sent += 1;
        }
      };
      ws.on('open', () => { stats.ws.opened += 1; burst(); timer = setInterval(burst, 10); });
      ws.on('message', (data) => { if (String(data).includes('"error"')) stats.ws.errorFrames += 1; });
      ws.on('error', () => undefined);
      ws.on('close', (code) => { clearInterval(timer); count(stats.ws.closes, String(code)); stats.openSockets -= 1; resolve(); });
      const pause = setInterval(() => { if (!on) { clearInterval(pause); ws.terminate(); } }, 20);
      ws.on('close', () => clearInterval(pause));
    });
  }
}
process.on('message', (m) => {
  if (m && typeof m.flood === 'boolean') on = m.flood;
  if (m && m.stats) process.send({ stats });
});
for (let i = 0; i < o.restConnections; i++) void restWorker(i);
for (let i = 0; i < o.sockets; i++) void socketWorker(i);
process.send({ ready: true });
`;

/** A flooder process: `flood(true)` starts, `flood(false)` pauses, `stats()` reads its counts. */
export interface Flooder {
  readonly pid: number;
  flood(on: boolean): void;
  stats(): Promise<FloodStats>;
  stop(): Promise<void>;
}

export async function startFlooder(options: FloodOptions): Promise<Flooder> {
  const child: ChildProcess = spawn(process.execPath, ['-e', PROGRAM], {
    // `ws` resolves from the repository's node_modules.
    cwd: join(__dirname, '..', '..', '..'),
    env: { PATH: process.env['PATH'] ?? '', FLOOD_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the flooder exited with ${code}`)));
  });
  return {
    pid: child.pid ?? 0,
    flood: (on) => child.send({ flood: on }),
    stats: () =>
      new Promise((resolve) => {
        const onMessage = (m: unknown): void => {
          const stats = (m as { stats?: FloodStats }).stats;
          if (!stats) return;
          child.off('message', onMessage);
          resolve(stats);
        };
        child.on('message', onMessage);
        child.send({ stats: true });
      }),
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
