import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { publishAtRate } from '../src/lib/publish-loop';

// A publisher that cannot keep up has failed its step once it is more than 5% late: it must stop
// there instead of publishing on (which only made failing steps, and the whole run, longer).
describe('bench: the publish loop', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    // Answers each request after 100 ms: one connection can make at most 10 publishes/s.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end('{"success":true}'), 100));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const spec = (rate: number) => ({
    targets: [{ host: '127.0.0.1', port }],
    path: '/api/publish',
    key: 'k',
    secret: 's',
    channels: ['c'],
    rate,
    durationMs: 500,
    stopAfterMs: 600,
    connections: 1,
  });

  it('stops at stopAfterMs when it has fallen behind, and reports the rate it reached', async () => {
    const result = await publishAtRate(spec(200));
    expect(result.elapsedMs).toBeGreaterThanOrEqual(600);
    expect(result.elapsedMs).toBeLessThan(900);
    expect(result.sent).toBeLessThan(100);
    expect(result.achievedRate).toBeLessThan(200 * 0.95);
    expect(result.failed).toBe(0);
  });

  it('sends every due publish and stops at durationMs when it keeps up', async () => {
    const result = await publishAtRate(spec(4));
    expect(result.sent).toBe(2);
    expect(result.ok).toBe(2);
    expect(result.elapsedMs).toBeLessThan(600);
  });
});
