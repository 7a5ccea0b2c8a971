import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { CLI_PATH, startRedis, startSwitchboardProcess } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { RedisServer, SwitchboardProcess } from '@switchboard/harness';
import type { TestClient } from '@switchboard/testing';
import {
  chooseBuilds,
  currentRuntime,
  describeNoBuild,
} from '../../packages/gateway/src/transport/uws-loader';

/**
 * The product through the real `npx switchboard` on a newer Node.js, run natively inside a Debian 13
 * root (glibc 2.41) by `.ci/newer-runtimes.sh`, which sets NEWER_RUNTIME_ROOT (the root, where this
 * repository is mounted at the same path and npm at the host's) and NEWER_RUNTIME_NODE (the major
 * version, at /opt/node<major>/bin inside the root). Redis and the clients run on this machine:
 * the root shares its network. Not part of `npm test`.
 */
const root = process.env['NEWER_RUNTIME_ROOT'];
const major = process.env['NEWER_RUNTIME_NODE'];
if (!root || !major)
  throw new Error('NEWER_RUNTIME_ROOT and NEWER_RUNTIME_NODE unset: run .ci/newer-runtimes.sh');
const nodeBin = `/opt/node${major}/bin`;
const repo = join(__dirname, '..', '..');
/** `chroot <root> sh -c 'cd <repo> && exec npx switchboard "$@"'`, with the root's Node.js first on PATH. */
const inRoot = ['chroot', root, 'sh', '-c', 'cd "$0" && exec npx switchboard "$@"', repo];
const PATH = `${nodeBin}:/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin`;

const key = { key: `k${randomBytes(6).toString('hex')}`, secret: randomBytes(16).toString('hex') };
let redis: RedisServer;
let prefix: string;
const procs: SwitchboardProcess[] = [];
const clients: TestClient[] = [];

interface Node {
  readonly proc: SwitchboardProcess;
  readonly httpUrl: string;
  connect(path: string, query?: Record<string, string>): Promise<TestClient>;
  api(path: string, body: Record<string, unknown>): ReturnType<typeof postJson>;
}

/** A gateway on the newer Node.js over the test's Redis. */
async function startNode(): Promise<Node> {
  const proc = startSwitchboardProcess(
    ['gateway'],
    {
      PATH,
      HOME: '/root',
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      KEY_CACHE_MS: '0',
      SWITCHBOARD_KEYS: JSON.stringify([{ ...key, domains: [] }]),
      DRAIN_GRACE_MS: '2000',
    },
    inRoot,
  );
  procs.push(proc);
  const starting = await proc.waitForLog({ msg: 'starting' }, 60_000);
  expect(String(starting['node'])).toMatch(new RegExp(`^v${major}\\.`));
  const ready = await proc.waitForLog({ msg: 'ready' }, 60_000);
  const httpUrl = `http://127.0.0.1:${Number(ready['port'])}`;
  return {
    proc,
    httpUrl,
    connect: async (path, query = {}) => {
      const search = new URLSearchParams({ api_key: key.key, ...query }).toString();
      const client = await connectClient(`${httpUrl.replace('http', 'ws')}${path}?${search}`);
      clients.push(client);
      return client;
    },
    api: (path, body) => postJson(`${httpUrl}${path}`, { ...key, ...body }),
  };
}

let a: Node;
let b: Node;

beforeAll(async () => {
  redis = await startRedis();
  prefix = `nr${randomBytes(4).toString('hex')}`;
  [a, b] = await Promise.all([startNode(), startNode()]);
}, 120_000);
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});
afterAll(async () => {
  // SIGKILL to the process group: npx and the gateway it started.
  for (const proc of procs) proc.kill('SIGKILL');
  await Promise.all(procs.map((proc) => proc.exited));
  await redis?.stop();
});

describe(`Node.js ${major} in Debian 13, through npx switchboard`, () => {
  it('publishes across two gateways to V3 and V4 subscribers', async () => {
    const v3 = await a.connect('/v3/news');
    const v4 = await a.connect('/v4/news');
    expect((await b.api('/api/publish', { channel: 'news', message: 'three' })).body).toMatchObject({
      success: true,
    });
    expect((await b.api('/api/v4/publish', { channel: 'news', message: 'four' })).body).toMatchObject({
      success: true,
    });
    expect((await v3.next()).text).toBe('three');
    expect((await v4.next()).text).toBe('four');
  });

  it('keeps V3 and V4 presence across the gateways', async () => {
    const watcher = await a.connect('/v4/lobby', { presence: '1', user: 'watcher' });
    await watcher.nextEvent('system::member_list');
    const dan = await b.connect('/v4/lobby', { presence: '1', user: 'dan' });
    await dan.nextEvent('system::member_list');
    const joined = await watcher.next(
      (f) => f.json?.['event'] === 'system::member_joined' && f.text.includes('"dan"'),
    );
    expect(joined.json?.['data']).toMatchObject({ member: { user: 'dan' }, count: 2 });
    expect((await b.api('/api/v4/members', { channel: 'lobby' })).body).toEqual({
      success: true,
      members: expect.arrayContaining(['watcher', 'dan']),
      count: 2,
    });

    const first = await b.connect('/v3/room', { presence: '1', user: 'x', uuid: 'ux' });
    await first.nextEvent('system:member_list');
    await a.connect('/v3/room', { presence: '1', user: 'y', uuid: 'uy' });
    const v3joined = await first.next(
      (f) => f.json?.['event'] === 'system:member_joined' && f.text.includes('"uy"'),
    );
    expect((v3joined.json?.['data'] as Record<string, unknown>)['member']).toEqual({ uuid: 'uy', user: 'y' });
  });

  it('kicks a connection held by the other gateway', async () => {
    const target = await a.connect('/v4/k', { uuid: 'kick-me', user: 'u' });
    await b.api('/api/v4/kick', { uuid: 'kick-me' });
    expect((await target.closed).code).toBe(4509);
  });

  it('drains on SIGTERM: its sockets close with 4000 and the process exits 0', async () => {
    const clientsOfB = [await b.connect('/v4/drain'), await b.connect('/v3/drain')];
    b.proc.kill('SIGTERM');
    for (const client of clientsOfB) expect((await client.closed).code).toBe(4000);
    // npx itself dies of the signal; the gateway it started drained and exited.
    await b.proc.exited;
    expect(b.proc.lines.some((line) => line.includes('"msg":"drained"'))).toBe(true);
    // The other gateway still serves.
    const still = await a.connect('/v4/after');
    expect((await a.api('/api/v4/publish', { channel: 'after', message: 'ok' })).body).toMatchObject({
      success: true,
    });
    expect((await still.next()).text).toBe('ok');
  });
});

describe(`Node.js ${major} on this machine's own C library`, () => {
  it('loads a native build, or stops at start-up with the one line and exit 1', async () => {
    const proc = startSwitchboardProcess(['gateway'], { PORT: '0', HOST: '127.0.0.1' }, [
      join(root, nodeBin, 'node'),
      CLI_PATH,
    ]);
    procs.push(proc);
    const starting = await proc.waitForLog({ msg: 'starting' }, 30_000);
    const version = String(starting['node']);
    const abi = { '22': '127', '24': '137', '25': '141' }[major] ?? '';
    const here = { ...currentRuntime(), node: version, abi };
    if (chooseBuilds(here).length > 0) {
      await proc.waitForLog({ msg: 'ready' }, 30_000);
    } else {
      expect((await proc.exited).code).toBe(1);
      expect(proc.errorLines).toEqual([describeNoBuild(here)]);
    }
  });
});
