import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { runMain, startRedis } from '@switchboard/harness';
import { product } from '../lib/procs';
import { openProductEngine } from '../lib/product';
import { callgrindControl as control, dumpedInstructions } from './callgrind-costs';

/**
 * Redis' instructions per publish, counted by valgrind's callgrind: a figure that does not move
 * with the machine's load, where CPU time on a shared VM moves by a fifth within minutes
 * (docs/performance.md, "What the publish script costs Redis"). It compares the product's two
 * ways of fanning a publication out, through the product's own engine (so the calls are exactly
 * the gateway's): a plain `PUBLISH` (a publication without history) and the publish script (a
 * REST publish with history and its message-log record). Two engines stand for two gateways,
 * each subscribed to every topic, as the publish-cost scenario's nodes are.
 *
 *   npm run bench:redis-instructions [-- --publishes N --topics T --batch B --run K --size S
 *     --max-bytes M --full --product-dir DIR]
 *
 * `--product-dir` measures another checkout (with built packages), such as the commit before a
 * change to the publish script.
 *
 * `--batch B` issues the publishes B per event-loop turn, so that a gateway's stream publications
 * go out as one batch script call of B (stream-publishes.ts): a turn is issued while the previous
 * one's call is unanswered, as under load (a quiet connection would send a turn's first
 * publication alone). The first turn counted still finds the connection quiet: its first
 * publication goes alone, the other B - 1 together. `--run K` (default B) sends K consecutive
 * publications to each topic: `--batch 10` is a batch of 10 to one topic (a Pusher
 * `batch_events` of 10), `--batch 10 --run 1` one over 10 topics. Publication n goes to topic
 * floor(n / K) mod T. The script calls made are counted (`INFO commandstats`, outside the count)
 * and printed, so a turn that did not leave as one call shows.
 *
 * Each stream keeps `--size S` publications (default 100) within `--max-bytes M` (default 0: no
 * byte cap). `--full` fills every stream to S before the count, so that every publication counted
 * drops the oldest (the steady state of a busy channel: an LPOP and `b` moved); without it a
 * stream holds one publication when the count starts.
 *
 * Needs valgrind (Debian's package). Counts user-space instructions only: the system calls
 * (reading the command, writing the reply and the two deliveries) are the same for both.
 */
interface Options {
  publishes: number;
  topics: number;
  /** Publishes issued per event-loop turn (1: one after the other, each awaited). */
  batch: number;
  /** Consecutive publishes per topic. */
  run: number;
  /** Each stream's retention. */
  size: number;
  maxBytes: number;
  /** Whether the streams are full when the count starts. */
  full: boolean;
}

interface Topic {
  key: string;
  protocol: 'v3';
  channel: string;
}

/** The slice of the product's engine used here. */
interface Node {
  broker: {
    setHandlers(handlers: { message(): void; control(): void }): void;
    subscribe(topic: Topic): Promise<void>;
    publish(publication: object): Promise<unknown>;
  };
  publishLogged?(publication: object, retention: object, key: string, record: object): Promise<unknown>;
  close(): Promise<void>;
}

type Mode = 'publish' | 'script';

const KEY = 'benchkey';
/** The publish-cost scenario's message: 100 bytes of JSON text. */
const BODY = JSON.stringify({ t: '0001764196800000', s: '0000000001', p: 'x'.repeat(52) });

function parse(argv: string[]): Options {
  const o: Options = { publishes: 2000, topics: 2000, batch: 1, run: 0, size: 100, maxBytes: 0, full: false };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--full') {
      o.full = true;
      i -= 1;
      continue;
    }
    if (argv[i] === '--product-dir') {
      product.dir = argv[i + 1] ?? product.dir;
      continue;
    }
    const value = Number(argv[i + 1]);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${argv[i]} needs a positive integer`);
    if (argv[i] === '--publishes') o.publishes = value;
    else if (argv[i] === '--topics') o.topics = value;
    else if (argv[i] === '--batch') o.batch = value;
    else if (argv[i] === '--run') o.run = value;
    else if (argv[i] === '--size') o.size = value;
    else if (argv[i] === '--max-bytes') o.maxBytes = value;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  if (o.run === 0) o.run = o.batch;
  if (o.publishes % o.batch !== 0) throw new Error('--publishes must be a multiple of --batch');
  return o;
}

/** Script calls (`EVALSHA` and `EVAL`) the server ran so far. */
async function scriptCalls(url: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true });
  try {
    await client.connect();
    const stats = await client.info('commandstats');
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return calls('evalsha') + calls('eval');
  } finally {
    client.disconnect();
  }
}

interface Count {
  /** Instructions per publication. */
  perPublish: number;
  /** Script calls the counted publishes made. */
  calls: number;
}

async function measure(mode: Mode, o: Options): Promise<Count> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-callgrind-'));
  // hz 1: Redis' periodic work (10 runs a second by default) stays out of the count.
  const server = await startRedis({
    args: ['--hz', '1'],
    launcher: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'out.%p')}`],
  });
  const { pid } = server;
  const nodes: Node[] = [];
  try {
    if (pid === undefined) throw new Error('valgrind exited at start');
    const env = { REDIS_URL: server.url, REDIS_PREFIX: 'bench' };
    let received = 0;
    let waiting: { count: number; resolve: () => void } | undefined;
    const delivered = (count: number): Promise<void> =>
      received >= count ? Promise.resolve() : new Promise((resolve) => (waiting = { count, resolve }));
    const onMessage = (): void => {
      received += 1;
      if (waiting && received >= waiting.count) waiting.resolve();
    };
    for (let i = 0; i < 2; i++) {
      const node = await openProductEngine<Node>(env);
      node.broker.setHandlers({ message: onMessage, control: () => undefined });
      nodes.push(node);
    }
    const topics = Array.from({ length: o.topics }, (_, i): Topic => ({
      key: KEY,
      protocol: 'v3',
      channel: `ch-${i}`,
    }));
    for (const node of nodes) for (const topic of topics) await node.broker.subscribe(topic);
    const [publisher] = nodes as [Node];
    const { publishLogged } = publisher;
    if (!publishLogged) throw new Error('the product engine cannot publish with a log record');
    const publish = (n: number): Promise<unknown> => {
      const topic = topics[Math.floor(n / o.run) % topics.length] as Topic;
      const acceptedAt = Date.now();
      const publication = {
        topic,
        body: BODY,
        origin: 'bench-1',
        source: 'api',
        acceptedAt,
        stampable: true,
      };
      if (mode === 'publish') return publisher.broker.publish(publication);
      const record = {
        id: '6f1c1a52-93c4-4a4e-8a55-0d2f1b6f9a10',
        channel: topic.channel,
        protocol: 'v3',
        source: 'api',
        message: BODY,
        timestamp: new Date(acceptedAt).toISOString(),
      };
      const retention = { size: o.size, ttlSeconds: 120, maxBytes: o.maxBytes };
      return publishLogged.call(publisher, publication, retention, KEY, record);
    };
    // Every topic's stream exists before the count: a first publication starts it (epoch, DEL).
    const warmUp = o.full ? o.size : 1;
    for (let round = 0; round < warmUp; round++) for (let n = 0; n < o.topics; n++) await publish(n * o.run);
    await delivered(2 * o.topics * warmUp);
    const callsBefore = await scriptCalls(server.url);
    await control(pid, ['-z']);
    /** Turn t's publishes, issued together. */
    const turn = (t: number): Promise<unknown> =>
      Promise.all(Array.from({ length: o.batch }, (_, i) => publish(t * o.batch + i)));
    if (o.batch === 1) {
      for (let n = 0; n < o.publishes; n++) await publish(n);
    } else {
      // Turn t + 1 is issued as soon as turn t - 1 is answered: turn t's call is out and
      // unanswered then (Redis answers in order), so turn t + 1's publishes wait for the end of
      // their turn and leave together.
      let previous = turn(0);
      await new Promise((resolve) => setImmediate(resolve));
      for (let t = 1; t < o.publishes / o.batch; t++) {
        const current = turn(t);
        await previous;
        previous = current;
      }
      await previous;
    }
    await delivered(2 * (o.topics * warmUp + o.publishes));
    await control(pid, ['-d', mode]);
    const calls = (await scriptCalls(server.url)) - callsBefore;
    return { perPublish: dumpedInstructions(dir, mode) / o.publishes, calls };
  } finally {
    for (const node of nodes) await node.close();
    // SIGTERM, awaited: Redis shuts down cleanly and callgrind writes its last dump (not read).
    await server.stop();
  }
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const counts: Record<Mode, Count> = {
    publish: await measure('publish', o),
    script: await measure('script', o),
  };
  const ratio = (counts.script.perPublish / counts.publish.perPublish).toFixed(2);
  const shape =
    (o.batch === 1 ? '' : `, ${o.batch} per turn, ${o.run} consecutive to a topic`) +
    `, streams of ${o.size}${o.maxBytes > 0 ? ` within ${o.maxBytes} bytes` : ''}${o.full ? ', full' : ''}`;
  console.log(
    `Redis instructions per publish (callgrind; ${o.publishes} publishes over ${o.topics} topics${shape}, 2 subscribed nodes):`,
  );
  console.log(`- PUBLISH (no history): ${Math.round(counts.publish.perPublish)}`);
  console.log(
    `- publish script (history + log record): ${Math.round(counts.script.perPublish)} (${ratio}×), ${counts.script.calls} script calls`,
  );
}

runMain('bench:redis-instructions', main, 1);
