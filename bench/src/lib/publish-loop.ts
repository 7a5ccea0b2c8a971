import { KeepAliveConnection, postRequest } from './http';
import type { HttpResult } from './http';
import { payload } from './payload';
import { eventBody, signedPath } from './pusher-protocol';

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
  /**
   * `pusher`: Pusher's HTTP API, `path` being `/apps/{id}/events`, each request signed with `key`
   * and `secret` and carrying the payload as the event's `data`. Default: Switchboard's REST body.
   */
  format?: 'pusher';
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
  // Connections the server closed (Soketi closes each one after its response) are opened again.
  const reopening = new Set<KeepAliveConnection>();
  const reopen = (c: KeepAliveConnection): void => {
    if (reopening.has(c) || stopped) return;
    reopening.add(c);
    c.open().then(
      () => reopening.delete(c),
      () => reopening.delete(c),
    );
  };
  let stopped = false;
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
          if (!candidate.busy && !candidate.alive) reopen(candidate);
        }
        if (!connection) break;
        free++;
        let path = spec.path;
        let body: string;
        if (spec.format === 'pusher') {
          body = eventBody(spec.channels[sent % spec.channels.length]!, payload(sent));
          path = signedPath('POST', spec.path, spec.key, spec.secret, body);
        } else {
          const head = heads[sent % heads.length]!;
          body = `${head.slice(0, -1)},"message":${JSON.stringify(payload(sent))}}`;
        }
        connection.send(postRequest(connection.host, connection.port, path, body), done);
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
  stopped = true;
  const deadline = Date.now() + 5000;
  while ((ok + failed < sent || reopening.size > 0) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 5));
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
