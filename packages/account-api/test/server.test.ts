import { startAccountApi } from '../src';
import { authA, populatedEngine, silentLogger, testConfig } from './fixtures';

describe('startAccountApi', () => {
  test('serves on a random port and closes', async () => {
    const engine = await populatedEngine();
    const running = await startAccountApi({ engine, logger: silentLogger(), config: testConfig() });
    expect(running.port).toBeGreaterThan(0);
    const base = `http://127.0.0.1:${running.port}`;
    const sum = await fetch(`${base}/api/connections/sum`, { headers: authA });
    expect(sum.status).toBe(200);
    expect(await sum.json()).toEqual({ connection_count: 8 });
    const health = await fetch(`${base}/api/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
    await running.close();
    await running.close();
    await expect(fetch(`${base}/api/health`)).rejects.toThrow();
  });

  test('rejects when the port is taken', async () => {
    const engine = await populatedEngine();
    const first = await startAccountApi({ engine, logger: silentLogger(), config: testConfig() });
    const taken = testConfig({ ACCOUNT_PORT: String(first.port) });
    await expect(startAccountApi({ engine, logger: silentLogger(), config: taken })).rejects.toThrow(
      /EADDRINUSE/,
    );
    await first.close();
  });
});
