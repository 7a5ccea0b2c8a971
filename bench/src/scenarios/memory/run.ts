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
  /**
   * What one more socket costs once the process holds `low` of them: RSS at `high` sockets less
   * RSS at `low`, divided (docs/benchmarks.md, "Idle memory"). Absent in results
   * from before 2026-11-27, and when a step did not open every socket.
   */
  slope?: { low: number; high: number; rssLowKiB: number; rssHighKiB: number; perConnectionKiB: number };
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

/**
 * RSS of one server process before and after `connections` idle sockets, divided; and the slope
 * between half of them and half as many again (`MemoryCase.slope`).
 */
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
    // In steps: half the connections, all of them (the first figure, from the baseline), then half
    // as many again: the slope between the first and last reading leaves out what the process
    // grows once under a burst of connections (its young generation, optimized code, hash tables
    // doubling), which the baseline's figure charges to the sockets. Socket i is on channel
    // i / (connections / channels): each step opens channels of its own, as many per channel.
    const perChannel = Math.max(1, Math.round(o.connections / o.channels));
    const low = Math.max(1, Math.floor(o.connections / 2));
    const high = o.connections + low;
    const rss: number[] = [];
    let open = 0;
    let firstError: string | undefined;
    for (const count of [low, o.connections, high]) {
      const opened = await fleet.connect(
        Array.from({ length: count - open }, (_, i) =>
          running.wsUrl(0, protocol, `idle-${Math.floor((open + i) / perChannel)}`),
        ),
        { concurrency: 400 },
      );
      firstError ??= opened.firstError;
      open += opened.ok;
      await new Promise((r) => setTimeout(r, o.settleMs));
      rss.push(rssKiB(pid));
      // A step that did not open all its sockets ends the case there, read as its first figure.
      if (count === o.connections || open < count) {
        result.ok = open;
        result.rssAfterKiB = rss[rss.length - 1]!;
      }
      if (open < count) break;
    }
    result.perConnectionKiB = (result.rssAfterKiB - result.rssBeforeKiB) / Math.max(1, result.ok);
    if (rss.length === 3 && open === high)
      result.slope = {
        low,
        high,
        rssLowKiB: rss[0]!,
        rssHighKiB: rss[2]!,
        perConnectionKiB: (rss[2]! - rss[0]!) / (high - low),
      };
    o.log(
      `  ${system}${nodeDefaults ? ' (Node defaults)' : ''} ${protocol}: ${result.ok}/${o.connections} idle, RSS ${(result.rssBeforeKiB / 1024).toFixed(1)} → ${(result.rssAfterKiB / 1024).toFixed(1)} MiB = ${result.perConnectionKiB.toFixed(2)} KiB/conn` +
        (result.slope
          ? `; slope ${low} → ${high}: ${(result.slope.rssLowKiB / 1024).toFixed(1)} → ${(result.slope.rssHighKiB / 1024).toFixed(1)} MiB = ${result.slope.perConnectionKiB.toFixed(2)} KiB/conn`
          : '') +
        (firstError ? ` (${firstError})` : ''),
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
