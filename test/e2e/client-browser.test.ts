/**
 * @switchboard/client in a real browser: headless Chromium (Debian's `chromium`; `.ci/run`
 * installs it) driven by playwright-core, which downloads nothing. The page loads the IIFE
 * bundle from dist/browser (built by `npm run build`, which `npm ci` runs), connects to a real
 * gateway, receives and publishes, sees presence, and recovers after the gateway restarts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import WebSocket from 'ws';
import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord, MemoryState } from '@switchboard/core';
import { chromiumPath } from '@switchboard/harness';
import { createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { Switchboard } from '@switchboard/client';
import type { Member } from '@switchboard/client';

const BUNDLE = join(
  __dirname,
  '..',
  '..',
  'packages',
  'client',
  'dist',
  'browser',
  'switchboard.iife.min.js',
);

let state: MemoryState;
let gateway: TestGateway;
/** The gateway that replaces `gateway` when it restarts (same engine, its own port). */
let replacement: TestGateway;
let key: ApiKeyRecord;
let pages: Server;
let browser: Browser;
let page: Page;
const nodeClients: Switchboard[] = [];

/** The page: the bundle as a script tag, nothing else (the global `Switchboard` comes from it). */
const HTML =
  '<!doctype html><meta charset="utf-8"><title>client</title><script src="/switchboard.js"></script>';

beforeAll(async () => {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run \`npm run build\``);
  state = createMemoryState();
  gateway = await startGateway({ memoryState: state });
  replacement = await startGateway({ memoryState: state });
  key = await createTestKey(gateway.engine);
  pages = createServer((request, response) => {
    if (request.url === '/switchboard.js') {
      response.setHeader('content-type', 'text/javascript');
      response.end(readFileSync(BUNDLE));
    } else {
      response.setHeader('content-type', 'text/html');
      response.end(HTML);
    }
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${(pages.address() as AddressInfo).port}/`);
});

afterAll(async () => {
  for (const client of nodeClients) client.close();
  await browser?.close();
  pages?.close();
  await replacement?.close();
});

/** Runs in the page: a client that records what its channel sees in `window.seen`. */
async function startBrowserClient(url: string[], apiKey: string): Promise<void> {
  await page.evaluate(
    ({ url, apiKey }) => {
      type Seen = { events: Array<[string, unknown]>; members: unknown[]; states: string[] };
      const w = globalThis as unknown as {
        Switchboard: {
          Switchboard: new (options: object) => Record<string, (...args: unknown[]) => unknown>;
        };
        sb: Record<string, (...args: unknown[]) => unknown>;
        room: Record<string, (...args: unknown[]) => unknown> & { members: unknown[] };
        seen: Seen;
      };
      const seen: Seen = { events: [], members: [], states: [] };
      w.seen = seen;
      // A long backoff: the test brings the client back with the browser's `online` event.
      w.sb = new w.Switchboard.Switchboard({
        url,
        apiKey,
        user: 'browser',
        backoff: { baseMs: 60000, capMs: 60000 },
      });
      w.sb['on']!('state', (state: unknown) => seen.states.push(state as string));
      w.room = w.sb['channel']!('browser-room', { presence: true }) as typeof w.room;
      w.room['on']!('*', (event: unknown, data: unknown) => seen.events.push([event as string, data]));
      w.room['on']!('member_joined', () => (seen.members = [...w.room.members]));
      w.room['on']!('member_left', () => (seen.members = [...w.room.members]));
      w.room['on']!('recovered', (info: unknown) => seen.events.push(['recovered', info]));
    },
    { url, apiKey },
  );
}

const seen = (): Promise<{ events: Array<[string, unknown]>; members: Member[]; states: string[] }> =>
  page.evaluate(() => (globalThis as unknown as { seen: never }).seen);

async function waitInPage<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} not seen in the browser; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const publish = (data: unknown): Promise<unknown> =>
  postJson(`${gateway.httpUrl}/api/v4/publish`, {
    key: key.key,
    secret: key.secret,
    channel: 'browser-room',
    message: { event: 'news', data },
  });

describe('the browser bundle in Chromium', () => {
  it('connects, receives, publishes, sees presence, and recovers what was published while the gateway restarted', async () => {
    const port = gateway.port;
    await startBrowserClient([`ws://127.0.0.1:${port}`, `ws://127.0.0.1:${replacement.port}`], key.key);
    await waitInPage(seen, (s) => s.states.includes('connected'), 'connected');
    // The position comes first: wait for it, so the channel has an offset to resume from.
    await waitInPage(
      () => page.evaluate(() => (globalThis as unknown as { room: { epoch?: string } }).room.epoch),
      (epoch) => typeof epoch === 'string',
      'the position',
    );

    await publish(1);
    await waitInPage(seen, (s) => s.events.some(([event]) => event === 'news'), 'the first publication');

    // A Node client in the same channel: presence and messages both ways.
    const node = new Switchboard({ url: `ws://127.0.0.1:${port}`, apiKey: key.key, user: 'node', WebSocket });
    nodeClients.push(node);
    const nodeRoom = node.channel('browser-room', { presence: true });
    await nodeRoom.ready();
    const members = await waitInPage(seen, (s) => s.members.length === 2, 'member_joined');
    expect(members.members.map((m) => m.user).sort()).toEqual(['browser', 'node']);
    const fromBrowser = new Promise<unknown>((resolve) => nodeRoom.on('hello', (data) => resolve(data)));
    await page.evaluate(() =>
      (globalThis as unknown as { room: { publish(e: string, d: unknown): Promise<void> } }).room.publish(
        'hello',
        {
          from: 'chromium',
        },
      ),
    );
    expect(await fromBrowser).toEqual({ from: 'chromium' });
    node.close();
    await waitInPage(seen, (s) => s.members.length === 1, 'member_left');

    // The gateway restarts: it drains and stops, its replacement (same engine) takes over, and
    // publications are made while the browser is away.
    await gateway.gateway.drain();
    await gateway.close();
    await waitInPage(seen, (s) => s.states.at(-1) === 'disconnected', 'disconnected');
    gateway = replacement;
    await publish(2);
    await publish(3);
    await page.evaluate(() =>
      (globalThis as unknown as { dispatchEvent(event: Event): void }).dispatchEvent(new Event('online')),
    );
    const after = await waitInPage(
      seen,
      (s) => s.events.filter(([event]) => event === 'news').length === 3,
      'the recovered publications',
    );
    expect(after.events.filter(([event]) => event === 'news').map(([, data]) => data)).toEqual([1, 2, 3]);
    expect(after.events.find(([event]) => event === 'recovered')?.[1]).toMatchObject({ missed: 2 });
    expect(after.states.slice(-2)).toEqual(['connecting', 'connected']);
  });
});
