import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createAccountApi } from '../src';
import { CONSOLE_DIR } from '../src/console';
import { authA, KEY_A, populatedEngine, silentLogger, testConfig } from './fixtures';

let app: Express;

beforeAll(async () => {
  if (!existsSync(join(CONSOLE_DIR, 'index.html')))
    throw new Error(`${CONSOLE_DIR} is missing: run \`npm run build\` (npm ci runs it)`);
  app = createAccountApi({ engine: await populatedEngine(), logger: silentLogger(), config: testConfig() });
});

const expectSecured = (headers: Record<string, string>): void => {
  const csp = headers['content-security-policy'] ?? '';
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['referrer-policy']).toBe('no-referrer');
  expect(headers['x-content-type-options']).toBe('nosniff');
};

describe('the web console is served by the account API', () => {
  test('GET / is the page, with the security headers, and loads only its own files', async () => {
    const res = await request(app).get('/').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expectSecured(res.headers as Record<string, string>);
    // No inline script or style and no handler attribute: the CSP would block them anyway.
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.text).not.toMatch(/\s(on[a-z]+|style)=/i);
    expect(res.text).not.toMatch(/https?:\/\//);
    expect(res.text).toContain('src="/console/console.js"');
  });

  test.each([
    ['/console/console.js', /javascript/],
    ['/console/console.css', /text\/css/],
    ['/console/favicon.svg', /image\/svg\+xml/],
    // Asked by browsers whatever the page links: the same icon, not a 404.
    ['/favicon.ico', /image\/svg\+xml/],
  ])('%s is served with the security headers', async (path, type) => {
    const res = await request(app).get(path).expect(200);
    expect(res.headers['content-type']).toMatch(type);
    expectSecured(res.headers as Record<string, string>);
  });

  test('the bundle loads nothing from elsewhere (no CDN, works offline)', () => {
    const bundle = readFileSync(join(CONSOLE_DIR, 'console.js'), 'utf8');
    expect(bundle).not.toMatch(/\bimport\s*\(?\s*["']https?:/);
    expect(readFileSync(join(CONSOLE_DIR, 'console.css'), 'utf8')).not.toMatch(
      /@import|url\(\s*["']?https?:/,
    );
  });

  test('an unknown console file is a JSON 404, not a directory listing', async () => {
    const res = await request(app).get('/console/../package.json').expect(404);
    expect(res.body.code).toBe('SB_NOT_FOUND');
    await request(app).get('/console/nope.js').expect(404);
  });

  test('the JSON API keeps no CORS: a page on another origin cannot read it', async () => {
    const res = await request(app)
      .get('/api/domains')
      .set(authA)
      .set('Origin', 'https://evil.example')
      .expect(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await request(app)
      .options('/api/messages')
      .set('Origin', 'https://evil.example')
      .set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-headers']).toBeUndefined();
  });
});

describe('GET /api/settings (the console settings view)', () => {
  test('shows webhook settings as the key record holds them, secrets hidden, never the key secret', async () => {
    const engine = await populatedEngine();
    // Whatever the record's webhook holds is shown, a secret-like field hidden.
    const record = {
      ...KEY_A,
      webhook: { url: 'https://hooks.example/in', signingSecret: 's3cr3t', events: ['member_added'] },
    };
    await engine.keys.put(record as typeof KEY_A);
    const withHooks = createAccountApi({ engine, logger: silentLogger(), config: testConfig() });
    const res = await request(withHooks).get('/api/settings').set(authA).expect(200);
    expect(JSON.stringify(res.body)).not.toContain(KEY_A.secret);
    expect(res.body.webhook).toEqual({
      url: 'https://hooks.example/in',
      signingSecret: '(hidden)',
      events: ['member_added'],
    });
    expect(res.body).toMatchObject({ key: KEY_A.key, appId: KEY_A.key, domains: KEY_A.domains });
  });

  test('shows the app id the record sets', async () => {
    const engine = await populatedEngine();
    await engine.keys.put({ ...KEY_A, appId: '1234567' });
    const app = createAccountApi({ engine, logger: silentLogger(), config: testConfig() });
    const res = await request(app).get('/api/settings').set(authA).expect(200);
    expect(res.body).toMatchObject({ key: KEY_A.key, appId: '1234567', subscriptionCount: false });
  });

  test('shows whether Pusher subscription counting is on', async () => {
    const engine = await populatedEngine();
    await engine.keys.put({ ...KEY_A, subscriptionCount: true });
    const app = createAccountApi({ engine, logger: silentLogger(), config: testConfig() });
    const res = await request(app).get('/api/settings').set(authA).expect(200);
    expect(res.body).toMatchObject({ key: KEY_A.key, subscriptionCount: true });
  });
});
