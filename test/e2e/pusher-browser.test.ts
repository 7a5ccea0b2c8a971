/**
 * `pusher-js` 8's browser bundle in a real browser (headless Chromium, Debian's `chromium`)
 * against two gateways on one real Redis: the page authorizes its private channel through a
 * backend endpoint that signs with the `pusher` server SDK, receives triggers made on the other
 * gateway, and exchanges client events with a Node client there.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import type { ApiKeyRecord } from '@switchboard/core';
import { chromiumPath, startRedis } from '@switchboard/harness';
import type { RedisServer } from '@switchboard/harness';
import { createTestKey, localPusherJs, pusherBackend, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import type Pusher from 'pusher';
import type PusherJs from 'pusher-js';
import type { Channel } from 'pusher-js';

const BUNDLE = require.resolve('pusher-js/dist/web/pusher.min.js');
const HTML = '<!doctype html><meta charset="utf-8"><title>pusher</title><script src="/pusher.js"></script>';

let redis: RedisServer;
let one: TestGateway;
let two: TestGateway;
let app: ApiKeyRecord;
let pages: Server;
let browser: Browser;
let page: Page;
let node: PusherJs | undefined;

const backend = (gateway: TestGateway): Pusher => pusherBackend(app, gateway.port);

beforeAll(async () => {
  redis = await startRedis();
  one = await startGateway({ env: { REDIS_URL: redis.url } });
  two = await startGateway({ env: { REDIS_URL: redis.url } });
  app = await createTestKey(one.engine);
  // The page's origin, and the app's auth endpoint (form-encoded, as pusher-js's ajax transport posts).
  pages = createServer((request, response) => {
    if (request.url === '/pusher.js') {
      response.setHeader('content-type', 'text/javascript');
      response.end(readFileSync(BUNDLE));
      return;
    }
    if (request.url === '/pusher/auth' && request.method === 'POST') {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const form = new URLSearchParams(body);
        const auth = backend(one).authorizeChannel(
          form.get('socket_id') ?? '',
          form.get('channel_name') ?? '',
        );
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(auth));
      });
      return;
    }
    response.setHeader('content-type', 'text/html');
    response.end(HTML);
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${(pages.address() as AddressInfo).port}/`);
}, 60_000);

afterAll(async () => {
  node?.disconnect();
  await browser?.close();
  pages?.close();
  await one?.close();
  await two?.close();
  await redis?.stop();
});

type Window = { seen: Array<[string, unknown]>; subscribed: string[]; client: { send(): void } };

it('subscribes, is authorized by the backend, receives triggers and exchanges client events', async () => {
  await page.evaluate(
    ({ key, port }) => {
      const w = globalThis as unknown as Window & {
        Pusher: new (
          key: string,
          options: object,
        ) => {
          subscribe(name: string): {
            bind(event: string, handler: (data: unknown) => void): void;
            trigger(event: string, data: unknown): boolean;
          };
        };
      };
      w.seen = [];
      w.subscribed = [];
      const pusher = new w.Pusher(key, {
        cluster: 'local',
        wsHost: '127.0.0.1',
        wsPort: port,
        forceTLS: false,
        enabledTransports: ['ws'],
        channelAuthorization: { endpoint: '/pusher/auth', transport: 'ajax' },
      });
      for (const name of ['browser-news', 'private-browser']) {
        const channel = pusher.subscribe(name);
        channel.bind('pusher:subscription_succeeded', () => w.subscribed.push(name));
        channel.bind('headline', (data) => w.seen.push(['headline', data]));
        channel.bind('client-hello', (data) => w.seen.push(['client-hello', data]));
        if (name === 'private-browser')
          w.client = { send: () => void channel.trigger('client-from-browser', { from: 'chromium' }) };
      }
    },
    { key: app.key, port: one.port },
  );
  await page.waitForFunction(() => (globalThis as unknown as Window).subscribed.length === 2);

  await backend(two).trigger('browser-news', 'headline', { title: 'hello' });
  await page.waitForFunction(() => (globalThis as unknown as Window).seen.length === 1);

  // A Node client on the other gateway, in the same private channel.
  node = localPusherJs({ key: app.key, port: two.port, signer: backend(two) });
  const room: Channel = node.subscribe('private-browser');
  await new Promise((resolve) => room.bind('pusher:subscription_succeeded', resolve));
  const fromBrowser = new Promise((resolve) => room.bind('client-from-browser', resolve));
  await page.evaluate(() => (globalThis as unknown as Window).client.send());
  expect(await fromBrowser).toEqual({ from: 'chromium' });
  room.trigger('client-hello', { from: 'node' });
  await page.waitForFunction(() => (globalThis as unknown as Window).seen.length === 2);
  expect(await page.evaluate(() => (globalThis as unknown as Window).seen)).toEqual([
    ['headline', { title: 'hello' }],
    ['client-hello', { from: 'node' }],
  ]);
});
