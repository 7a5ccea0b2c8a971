import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMain, startRedis } from '@switchboard/harness';
import { product } from '../lib/procs';
import { openProductEngine } from '../lib/product';

/**
 * Redis' instructions per publish, counted by valgrind's callgrind: a figure that does not move
 * with the machine's load, where CPU time on a shared VM moves by a fifth within minutes
 * (docs/performance.md, "What the publish script costs Redis"). It compares the product's two
 * ways of fanning a publication out, through the product's own engine (so the calls are exactly
 * the gateway's): a plain `PUBLISH` (a publication without history) and the publish script (a
 * REST publish with history and its message-log record). Two engines stand for two gateways,
 * each subscribed to every topic, as the publish-cost scenario's nodes are.
 *
 *   npm run bench:redis-instructions [-- --publishes N --topics T --product-dir DIR]
 *
 * `--product-dir` measures another checkout (with built packages), such as the commit before a
 * change to the publish script.
 *
 * Needs valgrind (Debian's package). Counts user-space instructions only: the system calls
 * (reading the command, writing the reply and the two deliveries) are the same for both.
 */
interface Options {
  publishes: number;
  topics: number;
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
  const o: Options = { publishes: 2000, topics: 2000 };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--product-dir') {
      product.dir = argv[i + 1] ?? product.dir;
      continue;
    }
    const value = Number(argv[i + 1]);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${argv[i]} needs a positive integer`);
    if (argv[i] === '--publishes') o.publishes = value;
    else if (argv[i] === '--topics') o.topics = value;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** Runs callgrind_control with `args` against `pid` and waits for it (Redis answers within 1/hz s). */
function control(pid: number, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('callgrind_control', [...args, String(pid)], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`callgrind_control ${args.join(' ')}: ${code}`)),
    );
  });
}

/** The instruction total of the dump callgrind wrote for `trigger` (its `summary:` line). */
function dumpedInstructions(dir: string, trigger: string): number {
  for (const name of readdirSync(dir)) {
    const text = readFileSync(join(dir, name), 'utf8');
    if (!text.includes(`Trigger: dump ${trigger}`)) continue;
    const match = /^summary: (\d+)$/m.exec(text);
    if (match) return Number(match[1]);
  }
  throw new Error(`no callgrind dump for ${trigger} in ${dir}`);
}

async function measure(mode: Mode, o: Options): Promise<number> {
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
      const topic = topics[n % topics.length] as Topic;
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
      return publishLogged.call(publisher, publication, { size: 100, ttlSeconds: 120 }, KEY, record);
    };
    // Every topic's stream exists before the count: a first publication starts it (epoch, DEL).
    for (let n = 0; n < o.topics; n++) await publish(n);
    await delivered(2 * o.topics);
    await control(pid, ['-z']);
    for (let n = 0; n < o.publishes; n++) await publish(n);
    await delivered(2 * (o.topics + o.publishes));
    await control(pid, ['-d', mode]);
    return dumpedInstructions(dir, mode) / o.publishes;
  } finally {
    for (const node of nodes) await node.close();
    // SIGTERM, awaited: Redis shuts down cleanly and callgrind writes its last dump (not read).
    await server.stop();
  }
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const counts: Record<Mode, number> = {
    publish: await measure('publish', o),
    script: await measure('script', o),
  };
  const ratio = (counts.script / counts.publish).toFixed(2);
  console.log(
    `Redis instructions per publish (callgrind; ${o.publishes} publishes over ${o.topics} topics, 2 subscribed nodes):`,
  );
  console.log(`- PUBLISH (no history): ${Math.round(counts.publish)}`);
  console.log(`- publish script (history + log record): ${Math.round(counts.script)} (${ratio}×)`);
}

runMain('bench:redis-instructions', main, 1);
