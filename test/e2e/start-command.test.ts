import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSwitchboardProcess } from '@switchboard/harness';
import { connectClient, postJson } from '@switchboard/testing';
import type { SwitchboardProcess } from '@switchboard/harness';

const dataDir = mkdtempSync(join(tmpdir(), 'sb-start-'));
const env = {
  PORT: '0',
  ACCOUNT_PORT: '0',
  METRICS_PORT: '0',
  HOST: '127.0.0.1',
  SWITCHBOARD_DATA_DIR: dataDir,
};
const running: SwitchboardProcess[] = [];

afterAll(() => {
  for (const proc of running) proc.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{
  proc: SwitchboardProcess;
  port: number;
  accountPort: number;
  metricsPort: number;
}> {
  const proc = startSwitchboardProcess(['start'], env);
  running.push(proc);
  const gateway = await proc.waitForLog({ msg: 'ready', component: 'gateway' });
  const account = await proc.waitForLog({ msg: 'ready', service: 'account-api' });
  const metrics = await proc.waitForLog({ msg: 'metrics ready' });
  return {
    proc,
    port: Number(gateway['port']),
    accountPort: Number(account['port']),
    metricsPort: Number(metrics['port']),
  };
}

describe('npm start (switchboard start)', () => {
  it('creates a development key on first start, prints it once, and serves both APIs with it', async () => {
    const { proc, port, accountPort, metricsPort } = await start();
    const key = (await proc.waitForLine((line) => line.trim().startsWith('key:'))).trim().slice(4).trim();
    const secret = (await proc.waitForLine((line) => line.trim().startsWith('secret:')))
      .trim()
      .slice(7)
      .trim();
    expect(proc.lines.some((line) => line.includes('npx wscat -c'))).toBe(true);
    expect(proc.lines.filter((line) => line.startsWith('{')).some((line) => line.includes(secret))).toBe(
      false,
    );

    const client = await connectClient(`ws://127.0.0.1:${port}/v3/room-1?api_key=${key}`);
    const published = await postJson(`http://127.0.0.1:${port}/api/publish`, {
      key,
      secret,
      channel: 'room-1',
      message: { event: 'hello', data: 'world' },
    });
    expect(published.body).toEqual({ success: true, offset: 1, epoch: expect.any(String) });
    expect((await client.next()).text).toBe('{"event":"hello","data":"world"}');
    const counts = await fetch(`http://127.0.0.1:${accountPort}/api/connections`, {
      headers: { key, secret },
    });
    expect(await counts.json()).toEqual([{ channel_id: 'room-1', room_id: 'room-1', connection_count: 1 }]);
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(scrape).toMatch(
      /^switchboard_connections\{protocol="v3",service="all-in-one",node_id="[^"]+"\} 1$/m,
    );
    expect(scrape).toMatch(/^switchboard_messages_out_total\{protocol="v3",source="api",[^}]*\} 1$/m);

    proc.kill('SIGTERM');
    expect((await client.closed).code).toBe(4000);
    expect(await proc.exited).toEqual({ code: 0, signal: null });

    const again = await start();
    expect(again.proc.lines.some((line) => line.trim().startsWith('secret:'))).toBe(false);
    again.proc.kill('SIGTERM');
    expect((await again.proc.exited).code).toBe(0);
  });

  it('exits 1 with one line per problem on invalid configuration', async () => {
    const proc = startSwitchboardProcess(['start'], { ...env, PORT: 'abc', LOG_LEVEL: 'loud' });
    running.push(proc);
    expect((await proc.exited).code).toBe(1);
    const problems = proc.lines.filter(Boolean);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^PORT: /);
    expect(problems[1]).toMatch(/^LOG_LEVEL: /);
  });
});
