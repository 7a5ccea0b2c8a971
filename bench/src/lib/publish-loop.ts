import { KeepAliveConnection, postRequest } from './http';
import type { HttpResult } from './http';
import { payload } from './payload';
import { batchBody, batchPath, eventBody, signedPath } from './pusher-protocol';

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
  /**
   * Most publishes one request carries (default 1). When connections are busy the due publishes
   * queue, and the next free connection takes up to this many at once: so the publisher's request
   * rate (what the HTTP round trip and the publisher's own CPU bound) is never what limits a step,
   * while no publish waits for a batch to fill (a request takes what is due, one or more). With
   * `pusher`, every request goes to `batch_events` beside `path` (Pusher's HTTP API allows 10 a
   * request); otherwise the body is `{"batch":[{channel,message},…]}`, which only the ceiling
   * servers read. Each publish keeps its own send time.
   */
  batch?: number;
}

export interface PublishResult {
  sent: number;
  ok: number;
  failed: number;
  /** Publishes that were due but found no free connection when due (the publisher fell behind). */
  lateMax: number;
  /** HTTP requests sent (fewer than `sent` when publishes were batched). */
  requests: number;
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
  const batch = Math.max(1, Math.floor(spec.batch ?? 1));
  const batchEventsPath = batchPath(spec.path);
  let sent = 0;
  let requests = 0;
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
  const done =
    (count: number) =>
    (result: HttpResult | Error): void => {
      if (result instanceof Error || result.status !== 200) {
        failed += count;
        firstError ??= result instanceof Error ? result.message : `${result.status} ${result.body}`;
      } else ok += count;
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
        const count = Math.min(batch, due - sent);
        let path = spec.path;
        let body: string;
        if (batch > 1) {
          const events: { channel: string; data: string }[] = [];
          for (let i = 0; i < count; i++)
            events.push({
              channel: spec.channels[(sent + i) % spec.channels.length]!,
              data: payload(sent + i),
            });
          if (spec.format === 'pusher') {
            body = batchBody(events);
            path = signedPath('POST', batchEventsPath, spec.key, spec.secret, body);
          } else
            body = JSON.stringify({ batch: events.map((e) => ({ channel: e.channel, message: e.data })) });
        } else if (spec.format === 'pusher') {
          body = eventBody(spec.channels[sent % spec.channels.length]!, payload(sent));
          path = signedPath('POST', spec.path, spec.key, spec.secret, body);
        } else {
          const head = heads[sent % heads.length]!;
          body = `${head.slice(0, -1)},"message":${JSON.stringify(payload(sent))}}`;
        }
        connection.send(postRequest(connection.host, connection.port, path, body), done(count));
        sent += count;
        requests++;
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
    requests,
    elapsedMs,
    achievedRate: (sent * 1000) / Math.max(elapsedMs, spec.durationMs),
    ...(firstError ? { firstError } : {}),
  };
}
