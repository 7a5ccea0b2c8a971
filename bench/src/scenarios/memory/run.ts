import { ClientFleet, fleetDefaults } from '../../lib/fleet';
import { isPusherSystem, rssKiB, startSystem } from '../../lib/procs';
import type { SystemName } from '../../lib/procs';

export interface MemoryCase {
  system: SystemName;
  protocol: 'v3' | 'v4';
  connections: number;
  ok: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  perConnectionKiB: number;
  /** Gateways started without the product's Node flags (packages/cli/src/node-flags.ts). */
  nodeDefaults?: boolean;
  error?: string;
}

export interface MemoryOptions {
  connections: number;
  channels: number;
  workers: number;
  settleMs: number;
  log: (line: string) => void;
}

/** RSS of one server process before and after `connections` idle sockets, divided. */
export async function memoryCase(
  system: SystemName,
  protocol: 'v3' | 'v4',
  o: MemoryOptions,
  nodeDefaults = false,
): Promise<MemoryCase> {
  const running = await startSystem(system, { nodes: 1, nodeDefaults });
  const fleet = new ClientFleet(
    o.workers,
    fleetDefaults.client,
    isPusherSystem(system) ? 'pusher-client.js' : 'client.js',
  );
  const pid = running.nodes[0]!.pid;
  const result: MemoryCase = {
    system,
    protocol,
    connections: o.connections,
    ok: 0,
    rssBeforeKiB: 0,
    rssAfterKiB: 0,
    perConnectionKiB: 0,
    ...(nodeDefaults ? { nodeDefaults } : {}),
  };
  try {
    // Warm-up: a few connections opened and closed, so code paths are loaded before the baseline.
    await fleet.connect(
      Array.from({ length: 50 }, (_, i) => running.wsUrl(0, protocol, `warm-${i}`)),
      { concurrency: 50 },
    );
    await fleet.closeAll();
    await new Promise((r) => setTimeout(r, o.settleMs));
    result.rssBeforeKiB = rssKiB(pid);
    const urls = Array.from({ length: o.connections }, (_, i) =>
      running.wsUrl(0, protocol, `idle-${i % o.channels}`),
    );
    const opened = await fleet.connect(urls, { concurrency: 400 });
    result.ok = opened.ok;
    await new Promise((r) => setTimeout(r, o.settleMs));
    result.rssAfterKiB = rssKiB(pid);
    result.perConnectionKiB = (result.rssAfterKiB - result.rssBeforeKiB) / Math.max(1, opened.ok);
    o.log(
      `  ${system}${nodeDefaults ? ' (Node defaults)' : ''} ${protocol}: ${opened.ok}/${o.connections} idle, RSS ${(result.rssBeforeKiB / 1024).toFixed(1)} → ${(result.rssAfterKiB / 1024).toFixed(1)} MiB = ${result.perConnectionKiB.toFixed(2)} KiB/conn` +
        (opened.firstError ? ` (${opened.firstError})` : ''),
    );
  } catch (error) {
    result.error = String(error);
    o.log(`  ERROR ${result.error}`);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    await running.stop();
  }
  return result;
}
