/**
 * The benchmark's CEILING: a minimal uWebSockets.js server, the reference every Switchboard figure
 * is divided by. It is NOT product code (the product imports uWS only in
 * packages/gateway/src/transport/uws.ts); it does the least work that still delivers a REST
 * publish: parse the JSON body, `app.publish(channel, message)`.
 *
 *   node server.js single         HTTP POST → app.publish
 *   node server.js redis          HTTP POST → Redis PUBLISH; SUBSCRIBE (per channel with local
 *                                 subscribers) → app.publish. Two such processes = one Redis hop.
 *   node server.js redis-script   The same with Switchboard's publish script (env PUBLISH_SCRIPT)
 *                                 instead of PUBLISH: the publication stored in its topic's
 *                                 history with an offset, a message-log record appended, the
 *                                 offset answered; subscribers get the body after the script's
 *                                 header. What storing history costs with the least JavaScript
 *                                 around it: the floor of any gateway that stores it this way.
 *                                 A batch body's publishes go to Redis in one call of the
 *                                 product's batch script (env PUBLISH_BATCH_SCRIPT), as a
 *                                 gateway's publishes of one event-loop turn do.
 *
 * Env: PORT, HOST, REDIS_URL (redis modes). WebSocket path: /<anything>/<channel>?…
 * PUSHER_FRAMES=1: the same work for Pusher clients, so that a Pusher server's benchmark compares
 * like with like (the same frames to the same clients): a socket is greeted with
 * `pusher:connection_established`, joins the channel of its `pusher:subscribe` (answered with
 * `pusher_internal:subscription_succeeded`), gets `pusher:pong` for `pusher:ping`, and each
 * publication goes out as Pusher's event frame `{"event","channel","data"}`, built once; Pusher's
 * HTTP API bodies (`events`, `batch_events`) are read, their signatures not checked.
 * POST /members (redis mode): ZRANGE of 100 on a sorted set and its JSON, the ceiling of a
 * members page.
 */
import type * as uWS from '@btc-vision/uwebsockets.js';
import { loadUws } from '@switchboard/gateway';
import { Buffer } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import Redis, { Command } from 'ioredis';

const mode = process.argv[2] === 'redis' || process.argv[2] === 'redis-script' ? process.argv[2] : 'single';
const host = process.env['HOST'] ?? '127.0.0.1';
const port = Number(process.env['PORT'] ?? 0);
/** The same native build the gateway loads on this Node.js, so both are measured on one runtime. */
const native = loadUws().uws;
const app = native.App();
const pub = mode === 'single' ? undefined : new Redis(process.env['REDIS_URL'] ?? '');
const sub = mode === 'single' ? undefined : new Redis(process.env['REDIS_URL'] ?? '');
const refs = new Map<string, number>();
const pusherFrames = process.env['PUSHER_FRAMES'] === '1';
let socketIds = 0;

/** `redis-script`: the wire the script publishes is `moA|<origin>|<ms>|<offset>|<epoch>|<body>`. */
const HEADER_FIELDS = mode === 'redis-script' ? 5 : 0;

sub?.on('messageBuffer', (channel: Buffer, message: Buffer) => {
  let start = 0;
  for (let i = 0; i < HEADER_FIELDS; i++) start = message.indexOf(0x7c, start) + 1;
  app.publish(channel.toString(), start ? message.subarray(start) : message);
});

const script = process.env['PUBLISH_SCRIPT'] ?? '';
const batchScript = process.env['PUBLISH_BATCH_SCRIPT'] ?? '';
let scriptSha: string | undefined;
let batchSha: string | undefined;
const scriptLoaded: Promise<unknown> =
  mode === 'redis-script'
    ? Promise.all([
        pub!.script('LOAD', script).then((sha) => (scriptSha = sha as string)),
        batchScript ? pub!.script('LOAD', batchScript).then((sha) => (batchSha = sha as string)) : undefined,
      ])
    : Promise.resolve();

/**
 * EVALSHA with its arguments handed over as they are: ioredis' own methods flatten them with
 * `Array.prototype.flat`, about 1,300 instructions an argument in V8, which Switchboard's call
 * does not pay either (packages/core/src/redis/flat-command.ts).
 */
class EvalshaCommand extends Command {
  constructor(private readonly strings: string[]) {
    super('evalsha', [], { replyEncoding: 'utf8' });
    this.args = strings;
  }

  /** RESP as Switchboard's call writes it: no global `Buffer` getter per argument. */
  override toWritable(): string {
    let resp = `*${this.strings.length + 1}\r\n$7\r\nevalsha\r\n`;
    for (const arg of this.strings) resp += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    return resp;
  }
}

/** The message-log record's timestamp, as Switchboard writes it: the text up to the second reused. */
let second = Number.NaN;
let upToSecond = '';
function isoNow(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    upToSecond = new Date(s * 1000).toISOString().slice(0, 20);
    second = s;
  }
  return `${upToSecond}${String(ms - s * 1000).padStart(3, '0')}Z`;
}

/** History's byte cap per topic, the product's default (`HISTORY_MAX_BYTES_PER_CHANNEL`, 1 MiB). */
const BYTE_CAP = String(1024 * 1024);

/** A publication's message-log record, as Switchboard writes it. */
const logRecord = (channel: string, message: string, acceptedAt: number): string =>
  `{"id":"${randomUUID()}","channel":${JSON.stringify(channel)},"protocol":"v3","source":"api","message":${JSON.stringify(message)},"timestamp":"${isoNow(acceptedAt)}"}`;

/** The publish script's call as Switchboard makes it on a standalone server (history-scripts.ts). */
function publishStored(channel: string, message: string): Promise<string> {
  const acceptedAt = Date.now();
  const record = logRecord(channel, message, acceptedAt);
  const topic = `{ceiling:${channel}}`;
  return pub!.sendCommand(
    new EvalshaCommand([
      scriptSha!,
      '3',
      `${topic}:meta`,
      `${topic}:list`,
      'ceiling:log',
      `moA|ceiling|${acceptedAt}|`,
      message,
      '100',
      '120',
      acceptedAt.toString(36),
      channel,
      BYTE_CAP,
      record,
      '600',
      '500',
    ]),
  ) as Promise<string>;
}

/**
 * Whether the product's batch script takes runs: consecutive publications of one topic as its
 * run's arguments once, then each publication's head, tail and log record (history-scripts.ts).
 * A product from before runs takes 8 arguments per publication.
 */
const batchRuns = batchScript.includes('storeRun');

/**
 * Several publications in one call of the batch script, with the keys and arguments Switchboard's
 * batch gives it (stream-publishes.ts): each run's meta and LIST (a run of consecutive publications
 * to one channel), then the one log.
 */
function publishStoredBatch(batch: { channel: string; message: string }[]): Promise<unknown> {
  const acceptedAt = Date.now();
  const keys: string[] = [];
  const args: string[] = [acceptedAt.toString(36), '0', '1'];
  let runs = 0;
  for (let i = 0; i < batch.length; runs++) {
    const { channel } = batch[i]!;
    let end = i + 1;
    while (batchRuns && end < batch.length && batch[end]!.channel === channel) end++;
    const topic = `{ceiling:${channel}}`;
    keys.push(`${topic}:meta`, `${topic}:list`);
    if (batchRuns) args.push(String(end - i), '100', '120', channel, BYTE_CAP, '1');
    for (; i < end; i++) {
      const { message } = batch[i]!;
      const head = `moA|ceiling|${acceptedAt}|`;
      const record = logRecord(channel, message, acceptedAt);
      if (batchRuns) args.push(head, message, record);
      else args.push(head, message, '100', '120', channel, '1', record, BYTE_CAP);
    }
  }
  args[1] = String(runs);
  keys.push('ceiling:log');
  args.push('600', '500');
  return pub!.sendCommand(
    new EvalshaCommand([batchSha!, String(keys.length), ...keys, ...args]),
  ) as Promise<unknown>;
}

interface Data {
  channel: string;
}

app.ws<Data>('/*', {
  compression: native.DISABLED,
  maxPayloadLength: 64 * 1024,
  idleTimeout: 60,
  maxBackpressure: 1024 * 1024,
  sendPingsAutomatically: true,
  upgrade: (res, req, context) => {
    // A Pusher socket names its channel in `pusher:subscribe`.
    const channel = pusherFrames ? '' : (req.getUrl().split('/')[2] ?? 'none');
    res.upgrade<Data>(
      { channel },
      req.getHeader('sec-websocket-key'),
      req.getHeader('sec-websocket-protocol'),
      req.getHeader('sec-websocket-extensions'),
      context,
    );
  },
  open: (ws) => {
    if (pusherFrames) {
      socketIds += 1;
      ws.send(
        `{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"${socketIds}.${socketIds}\\",\\"activity_timeout\\":120}"}`,
      );
      return;
    }
    join(ws.getUserData().channel, (topic) => ws.subscribe(topic));
  },
  message: (ws, data) => {
    if (!pusherFrames) return;
    const frame = JSON.parse(Buffer.from(data).toString()) as { event?: string; data?: { channel?: string } };
    if (frame.event === 'pusher:ping') ws.send('{"event":"pusher:pong","data":"{}"}');
    const channel = frame.data?.channel;
    if (frame.event !== 'pusher:subscribe' || typeof channel !== 'string' || ws.getUserData().channel) return;
    ws.getUserData().channel = channel;
    join(channel, (topic) => ws.subscribe(topic));
    ws.send(
      `{"event":"pusher_internal:subscription_succeeded","channel":${JSON.stringify(channel)},"data":"{}"}`,
    );
  },
  close: (ws) => {
    const { channel } = ws.getUserData();
    if (!channel) return;
    const count = (refs.get(channel) ?? 1) - 1;
    if (count > 0) refs.set(channel, count);
    else {
      refs.delete(channel);
      void sub?.unsubscribe(channel);
    }
  },
});

/** Subscribes a socket to `channel`, and the process to its Redis channel with its first socket. */
function join(channel: string, subscribe: (topic: string) => void): void {
  subscribe(channel);
  const count = refs.get(channel) ?? 0;
  refs.set(channel, count + 1);
  if (count === 0) void sub?.subscribe(channel);
}

function readBody(res: uWS.HttpResponse, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) then(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
}

function answer(res: uWS.HttpResponse, aborted: { value: boolean }, body: string): void {
  if (aborted.value) return;
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(body);
  });
}

app.post('/members', (res) => {
  const aborted = { value: false };
  res.onAborted(() => (aborted.value = true));
  readBody(res, (body) => {
    const { set } = JSON.parse(body.toString()) as { set: string };
    void pub!.zrange(set, 0, 99).then((members) => {
      answer(res, aborted, JSON.stringify({ success: true, members: members.map((uuid) => ({ uuid })) }));
    });
  });
});

/** One publish, answered through `then` once it is published (with the redis-script position). */
function publishOne(channel: string, message: string, then: (position?: string) => void): void {
  if (mode === 'redis-script') void publishStored(channel, message).then(then);
  else if (pub) void pub.publish(channel, message).then(() => then());
  else {
    app.publish(channel, message);
    then();
  }
}

/** A request's body: the REST publish, the ceiling's batch, or Pusher's `events` / `batch_events`. */
interface Item {
  channel?: string;
  channels?: string[];
  message?: string;
  name?: string;
  data?: string;
}
type Body = Item & { batch?: Item[] };

/** A request's publications, each with the text its subscribers get (a Pusher frame with PUSHER_FRAMES). */
function publicationsOf(body: Body): { channel: string; message: string }[] {
  const out: { channel: string; message: string }[] = [];
  for (const item of body.batch ?? [body]) {
    const text = item.message ?? item.data ?? '';
    for (const channel of item.channels ?? [item.channel ?? '']) {
      const message = pusherFrames
        ? `{"event":${JSON.stringify(item.name ?? 'message')},"channel":${JSON.stringify(channel)},"data":${JSON.stringify(text)}}`
        : text;
      out.push({ channel, message });
    }
  }
  return out;
}

/**
 * `{channel, message}`, or `{"batch":[{channel, message},…]}` (the Pusher scenario's publisher
 * batches as it does with `batch_events`, bench/src/lib/publish-loop.ts), or Pusher's bodies:
 * each publish as alone (the redis-script mode: a batch in one batch-script call), answered once
 * all are published; a single REST publish with its position.
 */
app.post('/*', (res) => {
  const aborted = { value: false };
  res.onAborted(() => (aborted.value = true));
  readBody(res, (body) => {
    const parsed = JSON.parse(body.toString()) as Body;
    const publications = publicationsOf(parsed);
    if (publications.length > 1 && mode === 'redis-script' && batchSha) {
      void publishStoredBatch(publications).then(() => answer(res, aborted, '{"success":true}'));
      return;
    }
    if (parsed.batch || publications.length !== 1) {
      let left = publications.length;
      for (const { channel, message } of publications)
        publishOne(channel, message, () => {
          if (--left === 0) answer(res, aborted, '{"success":true}');
        });
      return;
    }
    const [only] = publications;
    publishOne(only!.channel, only!.message, (position) => {
      if (position === undefined) {
        answer(res, aborted, '{"success":true}');
        return;
      }
      const bar = position.indexOf('|');
      const offset = position.slice(0, bar);
      const epoch = position.slice(bar + 1, -1);
      answer(res, aborted, `{"success":true,"offset":${offset},"epoch":"${epoch}"}`);
    });
  });
});

const connected = (client: Redis | undefined): Promise<unknown> =>
  !client || client.status === 'ready'
    ? Promise.resolve()
    : new Promise((resolve) => client.once('ready', resolve));

// Listens once its Redis connections are up and the script is loaded: whoever reaches the server
// can subscribe and publish at once (a slow start, under valgrind say, never loses a publish).
void Promise.all([connected(pub), connected(sub), scriptLoaded]).then(() =>
  app.listen(host, port, (socket) => {
    if (!socket) {
      console.error(JSON.stringify({ msg: 'listen failed', port }));
      process.exit(1);
    }
    console.log(JSON.stringify({ msg: 'ready', port: native.us_socket_local_port(socket) }));
  }),
);

process.on('SIGTERM', () => process.exit(0));
