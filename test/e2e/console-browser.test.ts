/**
 * The web console (docs/console.md) in a real browser: headless Chromium (Debian's `chromium`;
 * `.ci/run` installs it) driven by playwright-core. First against a real all-in-one node
 * (`switchboard start` as a child process), then against Redis with two gateways and the account
 * API. The page must never log a console error or make a request that fails unexpectedly, and
 * the secret must never appear in a URL it requests. The screenshots of docs/console.md are
 * taken here, so they always show the current page.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createLogger, loadConfig } from '@switchboard/core';
import { createEngine } from '@switchboard/cli';
import type { ApiKeyRecord, Engine } from '@switchboard/core';
import { startAccountApi } from '@switchboard/account-api';
import type { RunningAccountApi } from '@switchboard/account-api';
import { chromiumPath, startRedis, startSwitchboardProcess, waitFor } from '@switchboard/harness';
import { connectClient, createTestKey, pusherSocketUrl, startGateway } from '@switchboard/testing';
import type { RedisServer, SwitchboardProcess } from '@switchboard/harness';
import type { TestClient, TestGateway } from '@switchboard/testing';

const CONSOLE_BUILD = join(__dirname, '..', '..', 'packages', 'account-api', 'dist', 'console', 'console.js');
const SCREENSHOTS = join(__dirname, '..', '..', 'docs', 'console');

/**
 * A page that records every problem: console errors, uncaught exceptions, failed requests, and
 * error answers other than the statuses the test currently expects (a wrong secret's 401, the
 * 503 of an outage). Chromium logs each error answer as a console error too; those are the same
 * problem, counted once.
 */
interface WatchedPage {
  page: Page;
  urls: string[];
  problems: string[];
  expected: Set<number>;
}

async function watchedPage(context: BrowserContext): Promise<WatchedPage> {
  const page = await context.newPage();
  const watched: WatchedPage = { page, urls: [], problems: [], expected: new Set() };
  page.on('request', (request) => watched.urls.push(request.url()));
  page.on('requestfailed', (request) =>
    watched.problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`),
  );
  page.on('response', (response) => {
    if (response.status() >= 400 && !watched.expected.has(response.status()))
      watched.problems.push(`HTTP ${response.status()} for ${response.url()}`);
  });
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const status = /status of (\d{3})/.exec(message.text())?.[1];
    if (status !== undefined && watched.expected.has(Number(status))) return;
    if (status !== undefined) return; // already recorded by the response listener
    watched.problems.push(`console error: ${message.text()}`);
  });
  return watched;
}

/** The cell reading `text` (exactly, unless `exact` is false) in the table row containing `row`. */
const cell = (page: Page, row: string, text: string, exact = true) =>
  page.locator('tr', { hasText: row }).getByRole('cell', { name: text, exact });

let browser: Browser;
const clients: TestClient[] = [];
const contexts: BrowserContext[] = [];

/** A fresh browser profile; closed at the end, so no page keeps polling a server being stopped. */
async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  contexts.push(context);
  return context;
}

beforeAll(async () => {
  if (!existsSync(CONSOLE_BUILD)) throw new Error(`${CONSOLE_BUILD} is missing: run \`npm run build\``);
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
});

afterAll(async () => {
  for (const client of clients) client.close();
  await browser?.close();
});

describe('web console against an all-in-one node', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-console-'));
  let proc: SwitchboardProcess;

  afterAll(async () => {
    for (const context of contexts) await context.close();
    proc?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('signs in, shows a live channel and its member, publishes, shows the message and kicks', async () => {
    proc = startSwitchboardProcess(['start'], {
      PORT: '0',
      ACCOUNT_PORT: '0',
      METRICS_PORT: '0',
      HOST: '127.0.0.1',
      SWITCHBOARD_DATA_DIR: dataDir,
    });
    const port = Number((await proc.waitForLog({ msg: 'ready', component: 'gateway' }))['port']);
    const accountPort = Number((await proc.waitForLog({ msg: 'ready', service: 'account-api' }))['port']);
    const field = async (name: string) =>
      (await proc.waitForLine((line) => line.trim().startsWith(`${name}:`)))
        .trim()
        .slice(name.length + 1)
        .trim();
    const key = await field('key');
    const secret = await field('secret');

    const context = await newContext();
    const watched = await watchedPage(context);
    const { page } = watched;
    await page.goto(`http://127.0.0.1:${accountPort}/`);

    // A wrong secret: an error a person understands, and nothing stored.
    watched.expected.add(401);
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByLabel('Secret', { exact: true }).fill('not-the-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('Wrong key or secret.').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'sign-in.png') });
    watched.expected.delete(401);

    // Signed in with the keyboard: the empty state first.
    await page.getByLabel('Secret', { exact: true }).fill(secret);
    await page.getByLabel('Secret', { exact: true }).press('Enter');
    await page.getByText('No live channels').waitFor();

    // A client connects: its channel appears with its count.
    const client = await connectClient(
      `ws://127.0.0.1:${port}/v4/lobby?api_key=${key}&presence=1&user=alice&uuid=conn-alice`,
    );
    clients.push(client);
    await cell(page, 'lobby', '1').waitFor({ timeout: 2500 });
    const second = await connectClient(`ws://127.0.0.1:${port}/v4/lobby?api_key=${key}`);
    clients.push(second);
    await cell(page, 'lobby', '2').waitFor({ timeout: 2500 });
    second.close();
    await cell(page, 'lobby', '1').waitFor({ timeout: 2500 });
    await page.screenshot({ path: join(SCREENSHOTS, 'channels.png'), fullPage: true });

    // Its page: the member, then a publish from the form reaches the client and is listed.
    await page.getByRole('link', { name: 'lobby' }).click();
    await cell(page, 'conn-alice', 'alice').waitFor();
    await page.getByRole('textbox', { name: 'Message' }).fill('{"event":"from-console","data":"hi alice"}');
    await page.getByRole('button', { name: 'Publish' }).click();
    const received = await client.next((frame) => frame.json?.['event'] === 'from-console');
    expect(received.json).toEqual({ event: 'from-console', data: 'hi alice' });
    await cell(page, 'API', 'hi alice', false).waitFor({ timeout: 2500 });
    await page.getByText('Publish: done.').waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'channel.png'), fullPage: true });

    // A kick from the page closes the client with 4509.
    await page.getByRole('button', { name: 'Kick connection conn-alice' }).click();
    expect((await client.closed).code).toBe(4509);
    // The answer counts the sockets kicked on every gateway.
    await page.getByText('Kick connection conn-alice: 1 connection kicked.').waitFor({ timeout: 2500 });
    await page.getByText('No presence members here').waitFor({ timeout: 2500 });

    // A V3 member gets no per-row kick (targeted kicks select V4 only and would kick nobody);
    // the channel's kick closes it.
    const v3 = await connectClient(
      `ws://127.0.0.1:${port}/v3/lobby?api_key=${key}&presence=1&user=bob&uuid=conn-bob`,
    );
    clients.push(v3);
    await cell(page, 'conn-bob', 'Kick the channel to close V3 connections').waitFor({ timeout: 2500 });
    expect(await page.locator('tr', { hasText: 'conn-bob' }).getByRole('button').count()).toBe(0);
    await page.getByRole('button', { name: 'Kick every connection of this channel' }).click();
    expect((await v3.closed).code).toBe(4509);
    await page.getByText('No presence members here').waitFor({ timeout: 2500 });

    // The log is asked for what each view shows, never whole.
    const logReads = watched.urls.filter((url) => new URL(url).pathname === '/api/logs');
    expect(logReads.length).toBeGreaterThan(2);
    for (const url of logReads) expect(new URL(url).search).not.toBe('');
    expect(logReads.some((url) => url.endsWith('/api/logs?channel=lobby&limit=50'))).toBe(true);
    expect(logReads.some((url) => url.includes('messages=false'))).toBe(true);

    // A channel without publications: the history panel says why, without suggesting history is off.
    await page.goto(`http://127.0.0.1:${accountPort}/#/channel/quiet`);
    await page.getByText('No stored history for this channel: nothing was published to it').waitFor();
    expect(await page.getByText('when HISTORY_SIZE is set').count()).toBe(0);

    // A mangled link says so, and the page goes on working.
    await page.goto(`http://127.0.0.1:${accountPort}/#/channel/%E0%A4%A`);
    await page.getByRole('alert').getByText('is not valid percent-encoding').waitFor();
    await page.getByRole('link', { name: '← All channels' }).click();
    await page.getByRole('heading', { name: 'Live channels' }).waitFor();

    // The icon: linked by the page, and at /favicon.ico for whoever asks there.
    for (const path of ['/favicon.ico', '/console/favicon.svg']) {
      const icon = await page.request.get(`http://127.0.0.1:${accountPort}${path}`);
      expect(icon.status()).toBe(200);
      expect(icon.headers()['content-type']).toMatch(/^image\/svg\+xml/);
    }
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/console/favicon.svg');

    expect(watched.problems).toEqual([]);
    expect(watched.urls.length).toBeGreaterThan(5);
    expect(watched.urls.filter((url) => url.includes(secret))).toEqual([]);
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });
});

describe('web console against Redis with two gateways and the account API', () => {
  let redis: RedisServer;
  let nodes: TestGateway[] = [];
  let engine: Engine;
  let account: RunningAccountApi;

  beforeAll(async () => {
    redis = await startRedis();
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `console-${randomBytes(4).toString('hex')}` };
    nodes = [await startGateway({ env }), await startGateway({ env })];
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent', ACCOUNT_PORT: '0', HOST: '127.0.0.1' });
    engine = await createEngine(config, { logger: createLogger({ level: 'silent' }) });
    account = await startAccountApi({ engine, logger: createLogger({ level: 'silent' }), config });
  });

  /** A watched page of `context` on the account API's console, signed in with `key`. */
  async function signedIn(context: BrowserContext, key: ApiKeyRecord): Promise<WatchedPage> {
    const watched = await watchedPage(context);
    await watched.page.goto(`http://127.0.0.1:${account.port}/`);
    await watched.page.getByLabel('API key', { exact: true }).fill(key.key);
    await watched.page.getByLabel('Secret', { exact: true }).fill(key.secret);
    await watched.page.getByRole('button', { name: 'Sign in' }).click();
    return watched;
  }

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await account?.close();
    for (const node of nodes) await node.close();
    await engine?.close();
    await redis?.stop();
  });

  it('marks Pusher channels apart from PieSocket ones, and publishes to Pusher sockets as a Pusher event', async () => {
    const key = await createTestKey(engine);
    const [a, b] = nodes as [TestGateway, TestGateway];
    const pieSocket = await connectClient(a.wsUrl('/v4/shop', { api_key: key.key }));
    const pusher = await connectClient(pusherSocketUrl(b.port, key.key));
    const pusher2 = await connectClient(pusherSocketUrl(a.port, key.key));
    clients.push(pieSocket, pusher, pusher2);
    for (const socket of [pusher, pusher2]) {
      await socket.nextEvent('pusher:connection_established');
      socket.send({ event: 'pusher:subscribe', data: { channel: 'shop' } });
      await socket.nextEvent('pusher_internal:subscription_succeeded');
    }

    const context = await newContext();
    const watched = await signedIn(context, key);
    const { page } = watched;
    // One row per family, each with its own count.
    const row = (family: string) => page.locator('tr', { hasText: 'shop' }).filter({ hasText: family });
    await row('Pusher').getByRole('cell', { name: '2', exact: true }).waitFor({ timeout: 2500 });
    await row('PieSocket').getByRole('cell', { name: '1', exact: true }).waitFor({ timeout: 2500 });
    await page.getByText('3 connections in 2 channels').waitFor();

    await page.getByRole('link', { name: 'shop' }).first().click();
    await page.getByLabel('Protocol').selectOption('pusher');
    await page.getByLabel('Pusher event').fill('order-shipped');
    await page.getByRole('textbox', { name: 'Message' }).fill('{"id":7}');
    await page.getByRole('button', { name: 'Publish' }).click();
    for (const socket of [pusher, pusher2]) {
      const frame = await socket.nextEvent('order-shipped');
      expect(frame.json).toEqual({ event: 'order-shipped', channel: 'shop', data: '{"id":7}' });
    }
    await pieSocket.expectSilence(() => true, 100);
    expect(watched.problems).toEqual([]);
    await context.close();
  });

  it('publishes to clients on both gateways, shows the 503 state while Redis is down and recovers', async () => {
    const key = await createTestKey(engine);
    const [a, b] = nodes as [TestGateway, TestGateway];
    const onA = await connectClient(a.wsUrl('/v4/ops', { api_key: key.key, presence: '1', user: 'on-a' }));
    const onB = await connectClient(b.wsUrl('/v4/ops', { api_key: key.key, presence: '1', user: 'on-b' }));
    clients.push(onA, onB);

    const context = await newContext();
    const watched = await signedIn(context, key);
    const { page } = watched;
    await cell(page, 'ops', '2').waitFor({ timeout: 2500 });

    await page.getByRole('link', { name: 'ops' }).click();
    await cell(page, 'on-b', 'on-b').waitFor();
    await page.getByLabel('Format').selectOption('text');
    await page.getByRole('textbox', { name: 'Message' }).fill('plain text to everyone');
    await page.getByRole('button', { name: 'Publish' }).click();
    for (const client of [onA, onB]) await client.next((frame) => frame.text === 'plain text to everyone');
    await cell(page, 'API', 'plain text to everyone').waitFor({ timeout: 2500 });

    watched.expected.add(503);
    await redis.kill();
    await page.getByText('The engine is unavailable (503)').waitFor({ timeout: 5000 });
    await page.screenshot({ path: join(SCREENSHOTS, 'engine-down.png'), fullPage: true });

    await redis.restart();
    // The restarted Redis is empty (no persistence): the key is put back, as a persisted store keeps it.
    await waitFor(
      'the key put back',
      () =>
        engine.keys.put(key).then(
          () => true,
          () => false,
        ),
      10_000,
    );
    await page
      .locator('#status')
      .getByText('The engine is unavailable')
      .waitFor({ state: 'detached', timeout: 15_000 });
    await cell(page, 'on-a', 'on-a').waitFor({ timeout: 10_000 });
    watched.expected.delete(503);

    // Kicking the channel from the page closes its connections on both gateways.
    await page.getByRole('button', { name: 'Kick every connection of this channel' }).click();
    for (const client of [onA, onB]) expect((await client.closed).code).toBe(4509);
    await page.getByText('No presence members here').waitFor({ timeout: 2500 });

    expect(watched.problems).toEqual([]);
    expect(watched.urls.filter((url) => url.includes(key.secret))).toEqual([]);
    await context.close();
  });
});
