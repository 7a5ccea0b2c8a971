import fc from 'fast-check';
import request from 'supertest';
import { authA, populatedApp } from './fixtures';

const PATHS = [
  '/api/domains',
  '/api/connections',
  '/api/connections/sum',
  '/api/logs',
  '/api/members',
  '/api/health',
];

/** Parameter names and values a client might send by mistake, or on purpose. */
const name = fc.oneof(
  fc.constantFrom(
    'page',
    'limit',
    'PAGE',
    'page[]',
    'limit[0]',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
  ),
  fc.string({ maxLength: 12 }),
);
const value = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.constantFrom(
    '',
    '0',
    '1',
    '100',
    '101',
    '1e9',
    '-0',
    '9007199254740993',
    'NaN',
    'Infinity',
    ' 1',
    '01',
    '%',
    '%zz',
  ),
  fc.bigInt({ min: 0n, max: 10n ** 30n }).map(String),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
);
const rawQuery = fc.array(fc.tuple(name, value, fc.boolean()), { maxLength: 5 }).map((pairs) =>
  pairs
    .map(([n, v, encode]) => (encode ? `${encodeURIComponent(n)}=${encodeURIComponent(v)}` : `${n}=${v}`))
    .join('&')
    .replace(/[\s#]/g, ''),
);

describe('query strings never produce a 5xx', () => {
  test('any query on any endpoint answers 200 or a JSON 400', async () => {
    const { app } = await populatedApp();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PATHS), rawQuery, async (path, query) => {
        const res = await request(app).get(`${path}?${query}`).set(authA);
        expect([200, 400]).toContain(res.status);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        if (res.status === 400) expect(res.body.code).toBe('SB_INVALID_FIELD');
      }),
      { numRuns: 300 },
    );
  });

  test('valid page and limit always give a consistent page', async () => {
    const { app } = await populatedApp();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 300 }),
        async (page, limit) => {
          const res = await request(app)
            .get(`/api/connections?page=${page}&limit=${limit}`)
            .set(authA)
            .expect(200);
          const effective = Math.min(limit, 100);
          expect(res.body).toMatchObject({
            page,
            limit: effective,
            total: 4,
            totalPages: Math.ceil(4 / effective),
          });
          expect(res.body.data.length).toBe(Math.max(0, Math.min(effective, 4 - (page - 1) * effective)));
        },
      ),
      { numRuns: 100 },
    );
  });

  test('any path under /api answers JSON and never a 5xx', async () => {
    const { app } = await populatedApp();
    const segment = fc.oneof(
      fc.constantFrom('api', 'connections', 'sum', '..', '.', '%2F', '%', ''),
      fc.string({ maxLength: 8 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { maxLength: 4 }),
        fc.constantFrom('get', 'post', 'delete'),
        async (segments, method) => {
          const path = `/api/${segments.map((s) => s.replace(/[\s#?\\]/g, '')).join('/')}`;
          const res = await request(app)[method as 'get'](path).set(authA);
          expect(res.status).toBeLessThan(500);
          expect(res.headers['content-type']).toMatch(/^application\/json/);
        },
      ),
      { numRuns: 200 },
    );
  });
});
