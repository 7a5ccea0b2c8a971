import { connect } from 'node:net';
import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  createMetrics,
  loadConfig,
} from '@switchboard/core';
import { Opened, serveMetrics } from '../src/bootstrap';

/** Whether `host:port` accepts a TCP connection. */
const accepts = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** Serves the metrics port with the configuration of `env`; resolves its port and closer. */
async function serve(env: Record<string, string>): Promise<{ port: number; close: () => Promise<void> }> {
  const config = loadConfig({ METRICS_PORT: '0', LOG_LEVEL: 'silent', ...env });
  const lines: string[] = [];
  const logger = createLogger(
    { level: 'info', nodeId: 'test' },
    { write: (line: string) => lines.push(line) },
  );
  const metrics = createMetrics({ service: 'gateway', defaultMetrics: false });
  const runtime = { config, metrics, engine: createMemoryEngine(createMemoryState()), logger };
  const close = await serveMetrics(runtime, new Opened());
  const ready = lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((l) => l['msg'] === 'metrics ready');
  return { port: Number(ready?.['port']), close };
}

describe('METRICS_HOST', () => {
  // Loopback addresses: 127.0.0.2 is local on Linux without any setup.
  it('binds the metrics port to METRICS_HOST, apart from HOST', async () => {
    const { port, close } = await serve({ HOST: '127.0.0.1', METRICS_HOST: '127.0.0.2' });
    try {
      expect(await accepts('127.0.0.2', port)).toBe(true);
      expect(await accepts('127.0.0.1', port)).toBe(false);
    } finally {
      await close();
    }
  });

  it('defaults to HOST, as before it existed', async () => {
    const { port, close } = await serve({ HOST: '127.0.0.1' });
    try {
      expect(await accepts('127.0.0.1', port)).toBe(true);
      expect(await accepts('127.0.0.2', port)).toBe(false);
    } finally {
      await close();
    }
  });

  it('names METRICS_HOST when the metrics port cannot bind to it', async () => {
    // A documentation address (TEST-NET-1), not one of this machine: the bind fails, nothing is sent.
    const outcome = await serve({ HOST: '127.0.0.1', METRICS_HOST: '192.0.2.1' }).then(
      async (served) => (await served.close(), `bound on port ${served.port}`),
      (error: Error) => error.message,
    );
    expect(outcome).toBe(
      'METRICS_HOST 192.0.2.1 is not an address of this machine: set METRICS_HOST to an address of this machine, or 0.0.0.0 for all of them',
    );
  });
});
