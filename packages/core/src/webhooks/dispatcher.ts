import { createHash, createHmac } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { Agent, buildConnector } from 'undici';
import type { KeyStore } from '../keys/key-store';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics/metrics';
import type { ApiKey } from '../types';
import { isPrivateLiteral, PrivateAddressError, publicOnlyLookup } from './private-addresses';
import type { QueuedEvent, WebhookConfig, WebhookQueue } from './webhooks';

/** Timings and budgets of the dispatcher; the defaults are the documented behaviour (docs/webhooks.md). */
export interface DispatcherTiming {
  /** Events per request, at most. */
  readonly batchSize: number;
  /** How often an idle key's queue is read: events leave within about this long. */
  readonly pollMs: number;
  /** A key's lease lasts this long after its owner's last renewal. */
  readonly leaseMs: number;
  /** How often the keys with a webhook are listed again. */
  readonly refreshMs: number;
  /**
   * A request whose answer has not ended in this time has failed (connecting, waiting for the
   * status line and reading the body all count): its connection is closed.
   */
  readonly timeoutMs: number;
  /** Connections one gateway keeps to one receiver (scheme, host and port) at most. */
  readonly connectionsPerReceiver: number;
  /** Bytes of an answer's body read at most; a longer answer fails and its connection is closed. */
  readonly maxResponseBytes: number;
  /** Backoff: the n-th retry waits a random time below min(maxDelayMs, baseDelayMs × 2^n). */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_DISPATCHER_TIMING: DispatcherTiming = {
  batchSize: 100,
  pollMs: 50,
  leaseMs: 2000,
  refreshMs: 1000,
  timeoutMs: 5000,
  // Batches of one key go one at a time; a receiver shared by many keys gets up to this many at once.
  connectionsPerReceiver: 8,
  maxResponseBytes: 64 * 1024,
  baseDelayMs: 500,
  // A receiver back after an outage gets the held batch within this long (one full-jitter wait);
  // a longer cap would add up to its length to every outage's end for little saved load (one
  // request every 5 s on average per key while down).
  maxDelayMs: 10_000,
};

export interface WebhookDispatcherOptions {
  readonly queue: WebhookQueue;
  readonly keys: KeyStore;
  /** This process's name as a lease owner and stream consumer (the node id). */
  readonly owner: string;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** A batch is retried until this long after its first event was stored, then dropped. */
  readonly retrySeconds: number;
  /**
   * `WEBHOOK_DENY_PRIVATE`: connect only to public addresses, checked on the addresses each
   * connection is about to use (docs/security.md, "Webhooks and SSRF").
   */
  readonly denyPrivate?: boolean;
  readonly timing?: Partial<DispatcherTiming>;
}

/** What a key's worker needs of its record: where to send and how to sign. */
interface Target {
  readonly secret: string;
  readonly webhook: WebhookConfig;
  /** `webhook.url`, parsed once. */
  readonly url: URL;
}

/**
 * An event of a channel whose name starts with '#' (a Pusher user's `#server-to-user-…` and
 * `#watchlist-…` channels, which clients never name): no client or backend knows such a channel,
 * so its events are not sent. Read from the stored JSON text, which has no spaces.
 */
const isInternal = (event: QueuedEvent): boolean => event.json.includes('"channel":"#');

/** The id of a batch: the same for the same events, whoever delivers it and however often. */
export function deliveryId(key: ApiKey, batch: readonly QueuedEvent[]): string {
  const first = batch[0]?.id ?? '';
  const last = batch[batch.length - 1]?.id ?? '';
  return createHash('sha256').update(`${key}\n${first}\n${last}`).digest('hex').slice(0, 32);
}

/**
 * A request's body, `{"time_ms":…,"events":[…]}`, from the events' stored JSON text as it is:
 * the same text `JSON.stringify` of the parsed events would give, without parsing them.
 */
export function batchBody(timeMs: number, batch: readonly QueuedEvent[]): string {
  let events = '';
  for (const e of batch) events += events ? `,${e.json}` : e.json;
  return `{"time_ms":${timeMs},"events":[${events}]}`;
}

/** `X-Pusher-Signature`: hex HMAC-SHA256 of the raw body, keyed by the key's secret. */
export function webhookSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Delivers webhook events. Every gateway runs one; for each key with a webhook, the holder of
 * the key's lease reads its queue and sends one batch at a time (so events keep their order),
 * retrying a failed batch with full-jitter exponential backoff until `retrySeconds` after its
 * first event was stored, then dropping it (logged and counted). A batch is acknowledged only
 * after a 2xx or a drop: if this process dies first, the next lease holder sends it again with
 * the same delivery id.
 */
export class WebhookDispatcher {
  private readonly timing: DispatcherTiming;
  private readonly log: Logger;
  private readonly targets = new Map<ApiKey, Target>();
  private readonly workers = new Map<ApiKey, Promise<void>>();
  private readonly depths = new Map<ApiKey, number>();
  private readonly stopping = new AbortController();
  /**
   * Keep-alive connections to the receivers, one pool per origin of at most
   * `connectionsPerReceiver`: a key's batches reuse one connection.
   */
  private readonly agent: Agent;
  /** When each key's dropped events were last logged (a full queue drops at every event). */
  private readonly dropLogged = new Map<ApiKey, number>();
  private readonly unlisten: (() => void) | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WebhookDispatcherOptions) {
    this.timing = { ...DEFAULT_DISPATCHER_TIMING, ...options.timing };
    this.log = options.logger.child({ component: 'webhooks' });
    const { timeoutMs, connectionsPerReceiver, maxResponseBytes } = this.timing;
    this.agent = new Agent({
      connections: connectionsPerReceiver,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxResponseSize: maxResponseBytes,
      connect: options.denyPrivate ? publicConnector(timeoutMs) : { timeout: timeoutMs },
    });
    this.unlisten = options.queue.onDropped?.((key, events) => {
      options.metrics?.webhookDroppedEvents.inc(events);
      const now = Date.now();
      if (now - (this.dropLogged.get(key) ?? 0) < DROP_LOG_INTERVAL_MS) return;
      this.dropLogged.set(key, now);
      this.log.warn(
        { key, events },
        'webhook queue full: oldest events dropped (WEBHOOK_QUEUE_MAX_EVENTS, WEBHOOK_QUEUE_MAX_BYTES)',
      );
    });
  }

  start(): void {
    if (this.refreshTimer) return;
    const tick = (): void => {
      this.refreshing = this.refresh().finally(() => {
        this.refreshing = undefined;
      });
    };
    tick();
    this.refreshTimer = setInterval(tick, this.timing.refreshMs);
    this.refreshTimer.unref();
  }

  /** Stops reading; a batch in flight is left unacknowledged for the next lease holder. */
  async stop(): Promise<void> {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.stopping.abort();
    await this.refreshing;
    await Promise.all(this.workers.values());
    this.unlisten?.();
    await this.agent.destroy();
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async refresh(): Promise<void> {
    let records;
    try {
      records = await this.options.keys.listWebhooks();
    } catch (error) {
      this.log.debug({ err: error }, 'cannot list keys for webhooks; trying again');
      return;
    }
    const seen = new Set<ApiKey>();
    for (const record of records) {
      if (!record.webhook) continue;
      seen.add(record.key);
      const known = this.targets.get(record.key);
      let url = known?.webhook.url === record.webhook.url ? known.url : undefined;
      try {
        url ??= new URL(record.webhook.url);
      } catch {
        // The key store only takes http: and https: URLs; a record it did not check is skipped.
        continue;
      }
      this.targets.set(record.key, { secret: record.secret, webhook: record.webhook, url });
    }
    for (const key of [...this.targets.keys()]) if (!seen.has(key)) this.targets.delete(key);
    for (const key of [...this.dropLogged.keys()]) if (!seen.has(key)) this.dropLogged.delete(key);
    for (const key of this.targets.keys()) {
      if (this.stopped || this.workers.has(key)) continue;
      this.workers.set(
        key,
        this.work(key).finally(() => this.workers.delete(key)),
      );
    }
    // The depth of every key this node holds, read again at each refresh (after applying the
    // queue's limits where its writes do not): a worker retrying a batch reads nothing, and the
    // gauge must show the backlog growing during an outage.
    await Promise.all(
      [...this.depths.keys()].map(async (key) => {
        if (!this.targets.has(key)) {
          this.depths.delete(key);
          return;
        }
        try {
          await this.options.queue.enforceLimits?.(key);
          const depth = await this.options.queue.depth(key);
          if (this.depths.has(key)) this.depths.set(key, depth);
        } catch {
          // Kept as last read; the worker reports the engine's failure.
        }
      }),
    );
    let depth = 0;
    for (const value of this.depths.values()) depth += value;
    this.options.metrics?.webhookQueueDepth.set(depth);
  }

  /**
   * One key: wait for its lease, then deliver batch after batch while holding it. A batch's
   * acknowledgement goes with the read of the next one (one Redis call per batch); the lease is
   * renewed, and the depth read, every third of its time.
   */
  private async work(key: ApiKey): Promise<void> {
    const { queue, owner } = this.options;
    let renewedAt = 0;
    /** The ids of the batch last delivered (or dropped), not yet acknowledged. */
    let settled: readonly string[] = [];
    const acknowledge = async (): Promise<void> => {
      if (settled.length === 0) return;
      await queue.ack(key, settled);
      settled = [];
    };
    while (!this.stopped && this.targets.has(key)) {
      try {
        if (Date.now() - renewedAt > this.timing.leaseMs / 3) {
          if (!(await queue.lease(key, owner, this.timing.leaseMs))) {
            renewedAt = 0;
            this.depths.delete(key);
            await acknowledge();
            await this.sleep(this.timing.leaseMs / 2);
            continue;
          }
          renewedAt = Date.now();
          this.depths.set(key, await queue.depth(key));
        }
        const batch = await queue.next(key, owner, this.timing.batchSize, settled);
        settled = [];
        if (batch.length === 0) {
          await this.sleep(this.timing.pollMs);
          continue;
        }
        // Events of internal channels (names starting with '#': a Pusher user's own channels)
        // are never sent; they are acknowledged with the batch.
        const visible = batch.some(isInternal) ? batch.filter((e) => !isInternal(e)) : batch;
        if (visible.length === 0 || (await this.deliver(key, visible))) settled = batch.map((e) => e.id);
        else renewedAt = 0;
      } catch (error) {
        this.log.debug({ err: error, key }, 'webhook queue unavailable; trying again');
        renewedAt = 0;
        await this.sleep(this.timing.refreshMs);
      }
    }
    // Stopped, or the key's webhook is gone: what was delivered is acknowledged now.
    await acknowledge().catch((error: unknown) =>
      this.log.debug(
        { err: error, key },
        'cannot acknowledge a delivered webhook batch; it may be sent again',
      ),
    );
  }

  /**
   * Sends one batch until a 2xx, the end of the retry window, a lost lease, or stop. True when
   * the batch is done with (delivered or dropped): the caller acknowledges it.
   */
  private async deliver(key: ApiKey, batch: QueuedEvent[]): Promise<boolean> {
    const { queue, owner, metrics, retrySeconds } = this.options;
    const id = deliveryId(key, batch);
    const deadline = (batch[0]?.storedAt ?? Date.now()) + retrySeconds * 1000;
    for (let attempt = 0; ; attempt += 1) {
      const target = this.targets.get(key);
      if (!target) return false;
      const problem = await this.post(key, target, id, batch);
      if (problem === undefined) {
        metrics?.webhookDeliveries.inc({ result: 'delivered' });
        const now = Date.now();
        for (const e of batch) metrics?.webhookLatency.observe(Math.max(0, now - e.storedAt) / 1000);
        return true;
      }
      metrics?.webhookDeliveries.inc({ result: 'failed' });
      const url = target.webhook.url;
      if (attempt === 0)
        this.log.warn({ key, url, delivery: id, problem }, 'webhook delivery failed; retrying');
      else this.log.debug({ key, url, delivery: id, problem, attempt }, 'webhook delivery failed again');
      if (Date.now() >= deadline) {
        metrics?.webhookDeliveries.inc({ result: 'dropped' });
        metrics?.webhookDroppedBatches.inc();
        this.log.error(
          { key, url, delivery: id, events: batch.length, problem, retrySeconds },
          'webhook batch dropped: no 2xx answer within WEBHOOK_RETRY_SECONDS',
        );
        return true;
      }
      const cap = Math.min(this.timing.maxDelayMs, this.timing.baseDelayMs * 2 ** Math.min(attempt, 30));
      await this.sleep(Math.min(Math.random() * cap, Math.max(0, deadline - Date.now())));
      if (this.stopped) return false;
      // Another node took the key over: it will send this batch itself, with the same id.
      if (!(await queue.lease(key, owner, this.timing.leaseMs))) return false;
    }
  }

  /**
   * One request; resolves undefined on a 2xx whose body has ended within `timeoutMs` (the body is
   * read and discarded, at most `maxResponseBytes`, so the connection is kept for the next batch),
   * else what went wrong. A request cut short by its deadline, a long answer or stop has its
   * connection closed. Redirects are not followed.
   */
  private async post(
    key: ApiKey,
    target: Target,
    id: string,
    batch: readonly QueuedEvent[],
  ): Promise<string | undefined> {
    const body = batchBody(Date.now(), batch);
    const { url } = target;
    // One controller per request, aborted at the deadline or at stop (AbortSignal.any over the
    // long-lived stop signal would keep a reference per request on some Node versions).
    const controller = new AbortController();
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      controller.abort();
    }, this.timing.timeoutMs);
    const stop = (): void => controller.abort();
    this.stopping.signal.addEventListener('abort', stop, { once: true });
    const { signal } = controller;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-pusher-key': key,
      'x-pusher-signature': webhookSignature(target.secret, body),
      'x-switchboard-delivery': id,
    };
    // Credentials in the URL (https://user:pass@host/) are sent as Basic authentication.
    if (url.username || url.password) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    try {
      const response = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers,
        body,
        signal,
      });
      // Read to its end: the answer counts once it is whole, and the connection is then reusable.
      await finished(response.body.resume());
      const status = response.statusCode;
      return status >= 200 && status < 300 ? undefined : `HTTP ${status}`;
    } catch (error) {
      if (this.stopping.signal.aborted) return 'dispatcher stopped';
      const code = error instanceof Error && 'code' in error ? error.code : undefined;
      if (late || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
        return `no complete answer within ${this.timing.timeoutMs} ms`;
      if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE')
        return `answer longer than ${this.timing.maxResponseBytes} bytes`;
      return error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
      this.stopping.signal.removeEventListener('abort', stop);
    }
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.stopping.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done);
    });
  }
}

/** A full queue drops at every new event; its warning is logged at most this often per key. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * Connections under `WEBHOOK_DENY_PRIVATE`: an address literal is checked here (`net.connect`
 * does not look it up), a name on the addresses it resolves to (`publicOnlyLookup`).
 */
function publicConnector(timeoutMs: number): buildConnector.connector {
  const connect = buildConnector({ timeout: timeoutMs, lookup: publicOnlyLookup });
  return (options, callback) => {
    if (isPrivateLiteral(options.hostname)) {
      callback(new PrivateAddressError(options.hostname, options.hostname), null);
      return;
    }
    connect(options, callback);
  };
}
