import { KeepAliveConnection, postRequest } from './http';
import type { HttpResult } from './http';
import { payload } from './payload';

/**
 * REST publishes at a fixed rate over a pool of keep-alive connections,
 * channels and target nodes round-robin. Each message embeds its send time. Bounded: stops
 * scheduling after `durationMs` (`stopAfterMs` when behind), waits at most 5 s for answers in flight.
 */
export interface PublishSpec {
  targets: { host: string; port: number }[];
  path: string;
  key: string;
  secret: string;
  channels: string[];
  /** Publishes per second. */
  rate: number;
  durationMs: number;
  /**
   * Publishing stops here even if not all due publishes went out: a step that late has failed
   * its publish-rate criterion whatever happens next, so going on only costs time.
   */
  stopAfterMs: number;
  /** Connections per target. */
  connections: number;
}

export interface PublishResult {
  sent: number;
  ok: number;
  failed: number;
  /** Publishes that were due but found no free connection when due (the publisher fell behind). */
  lateMax: number;
  elapsedMs: number;
  achievedRate: number;
  firstError?: string;
}

export async function publishAtRate(spec: PublishSpec): Promise<PublishResult> {
  const pool: KeepAliveConnection[] = [];
  for (const target of spec.targets) {
    for (let i = 0; i < spec.connections; i++) pool.push(new KeepAliveConnection(target.host, target.port));
  }
  await Promise.all(pool.map((c) => c.open()));
  const heads = spec.channels.map((channel) =>
    JSON.stringify({ key: spec.key, secret: spec.secret, channel }),
  );
  let sent = 0;
  let ok = 0;
  let failed = 0;
  let lateMax = 0;
  let firstError: string | undefined;
  let cursor = 0;
  const done = (result: HttpResult | Error): void => {
    if (result instanceof Error || result.status !== 200) {
      failed++;
      firstError ??= result instanceof Error ? result.message : `${result.status} ${result.body}`;
    } else ok++;
  };
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const elapsed = performance.now() - start;
      const due = Math.min(
        Math.floor((elapsed * spec.rate) / 1000),
        Math.round((spec.durationMs * spec.rate) / 1000),
      );
      let free = 0;
      while (sent < due) {
        let connection: KeepAliveConnection | undefined;
        for (let n = 0; n < pool.length; n++) {
          const candidate = pool[(cursor + n) % pool.length]!;
          if (!candidate.busy && candidate.alive) {
            connection = candidate;
            cursor = (cursor + n + 1) % pool.length;
            break;
          }
        }
        if (!connection) break;
        free++;
        const head = heads[sent % heads.length]!;
        const body = `${head.slice(0, -1)},"message":${JSON.stringify(payload(sent))}}`;
        connection.send(postRequest(connection.host, connection.port, spec.path, body), done);
        sent++;
      }
      lateMax = Math.max(lateMax, due - sent);
      if (elapsed >= spec.durationMs && sent >= due) {
        resolve();
        return;
      }
      if (elapsed >= spec.stopAfterMs) {
        resolve();
        return;
      }
      setTimeout(tick, free === 0 && sent < due ? 0 : 1);
    };
    tick();
  });
  const elapsedMs = performance.now() - start;
  const deadline = Date.now() + 5000;
  while (ok + failed < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  for (const connection of pool) connection.close();
  return {
    sent,
    ok,
    failed: failed + (sent - ok - failed),
    lateMax,
    elapsedMs,
    achievedRate: (sent * 1000) / Math.max(elapsedMs, spec.durationMs),
    ...(firstError ? { firstError } : {}),
  };
}
