import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMain, startRedis } from '@switchboard/harness';
import { product } from '../lib/procs';
import { openProductEngine } from '../lib/product';
import { callgrindControl as control, dumpedInstructions } from './callgrind-costs';

/**
 * Redis' instructions per account API read of a Pusher presence channel's members, counted by
 * valgrind's callgrind (a figure that does not move with the machine's load), listed per socket
 * (the store's roster read: what the account API did before members were users) and per user
 * (its identity read: docs/pusher.md, "Members are users in the account API too"):
 *
 *   npm run bench:members-instructions [-- --users U --tabs T --reads N --limit L --page P
 *     --product-dir DIR]
 *
 * U users (default 200) with T sockets each (default 2, on T nodes) join one Pusher presence
 * channel through the product's own `PresenceStore`; then N reads (default 200) of each kind are
 * counted: `GET /api/members`' read of the channel (`channels` with `membersPerChannel` L, default
 * 200, `ROSTER_LIMIT`'s default) and a `GET /api/channel-members` page of P (default 100). Then
 * N joins are counted: a Pusher presence join's write script listing the channel's users (at
 * most `PUSHER_MAX_PRESENCE_MEMBERS`, 100), each the same socket joining again (the same writes
 * each time, so every join counted costs the same). `--product-dir` measures another checkout
 * (with built packages), such as the commit before a change to the presence scripts.
 *
 * Needs valgrind (Debian's package). Counts user-space instructions only.
 */
interface Options {
  users: number;
  tabs: number;
  reads: number;
  limit: number;
  page: number;
}

interface Topic {
  key: string;
  protocol: string;
  channel: string;
}

/** The slice of the product's engine used here. */
interface Node {
  presence: {
    join(
      topic: Topic,
      entry: { connId: string; nodeId: string; member: object },
      now: number,
      listing?: { of: 'identities'; limit: number },
    ): Promise<unknown>;
    roster(topic: Topic, limit: number): Promise<unknown>;
    identities(topic: Topic, offset: number, limit: number): Promise<unknown>;
    channels(key: string, listing: object): Promise<unknown>;
  };
  close(): Promise<void>;
}

const KEY = 'benchkey';
const TOPIC: Topic = { key: KEY, protocol: 'pusher', channel: 'presence-bench' };
/** `PUSHER_MAX_PRESENCE_MEMBERS`' default: the users a Pusher join lists. */
const JOIN_LISTING = { of: 'identities', limit: 100 } as const;

function parse(argv: string[]): Options {
  const o: Options = { users: 200, tabs: 2, reads: 200, limit: 200, page: 100 };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--product-dir') {
      product.dir = argv[i + 1] ?? product.dir;
      continue;
    }
    const value = Number(argv[i + 1]);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${argv[i]} needs a positive integer`);
    if (argv[i] === '--users') o.users = value;
    else if (argv[i] === '--tabs') o.tabs = value;
    else if (argv[i] === '--reads') o.reads = value;
    else if (argv[i] === '--limit') o.limit = value;
    else if (argv[i] === '--page') o.page = value;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'sb-callgrind-'));
  // hz 1: Redis' periodic work stays out of the count.
  const server = await startRedis({
    args: ['--hz', '1'],
    launcher: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'out.%p')}`],
  });
  const { pid } = server;
  let node: Node | undefined;
  try {
    if (pid === undefined) throw new Error('valgrind exited at start');
    node = await openProductEngine<Node>({ REDIS_URL: server.url, REDIS_PREFIX: 'bench' });
    const { presence } = node;
    let now = 1_000_000;
    for (let tab = 0; tab < o.tabs; tab++) {
      await Promise.all(
        Array.from({ length: o.users }, (_, u) =>
          presence.join(
            TOPIC,
            {
              connId: `n${tab}/${u}`,
              nodeId: `n${tab}`,
              member: { uuid: `${tab}.${u}`, user: `user-${u}`, info: { name: `User ${u}` } },
            },
            (now += 1),
          ),
        ),
      );
    }
    const listing = { protocol: 'pusher', offset: 0, limit: 100, membersPerChannel: o.limit };
    const reads: Array<[string, () => Promise<unknown>]> = [
      ['members-sockets', () => presence.channels(KEY, listing)],
      ['members-users', () => presence.channels(KEY, { ...listing, byIdentity: new Set(['pusher']) })],
      ['page-sockets', () => presence.roster(TOPIC, o.page)],
      ['page-users', () => presence.identities(TOPIC, 0, o.page)],
      [
        'join',
        () =>
          presence.join(
            TOPIC,
            {
              connId: 'n0/0',
              nodeId: 'n0',
              member: { uuid: '0.0', user: 'user-0', info: { name: 'User 0' } },
            },
            now,
            JOIN_LISTING,
          ),
      ],
    ];
    const counts: Record<string, number> = {};
    for (const [name, read] of reads) {
      await read();
      await control(pid, ['-z']);
      for (let n = 0; n < o.reads; n++) await read();
      await control(pid, ['-d', name]);
      counts[name] = dumpedInstructions(dir, name) / o.reads;
    }
    const per = (name: string): string => String(Math.round(counts[name] ?? 0));
    console.log(
      `Redis instructions per read (callgrind; ${o.users} Pusher users × ${o.tabs} sockets in one channel, ${o.reads} reads each):`,
    );
    console.log(
      `- /api/members' channel read (at most ${o.limit}): per socket ${per('members-sockets')}, per user ${per('members-users')}`,
    );
    console.log(
      `- /api/channel-members page of ${o.page}: per socket ${per('page-sockets')}, per user ${per('page-users')}`,
    );
    console.log(`- a Pusher presence join listing at most ${JOIN_LISTING.limit} users: ${per('join')}`);
  } finally {
    await node?.close();
    await server.stop();
  }
}

runMain('bench:members-instructions', main, 1);
