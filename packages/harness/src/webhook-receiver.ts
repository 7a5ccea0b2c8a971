import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One event of a webhook batch (Pusher format: `{ time_ms, events: [...] }`). */
export type WebhookEvent = { name: string; channel: string; user_id?: string; [field: string]: unknown };

/** One request as the receiver saw it. */
export interface ReceivedHook {
  readonly delivery: string;
  readonly valid: boolean;
  readonly status: number;
  readonly events: WebhookEvent[];
}

/** What a receiver counted (kept whether or not it records each request). */
export interface WebhookCounts {
  requests: number;
  events: number;
  /** Events per name (`member_added`, `channel_occupied`…). */
  byName: Record<string, number>;
  /** Requests whose body did not parse as a batch. */
  malformed: number;
}

/** Checks a request's signature and reads its events (the e2e suites use the Pusher SDK's helper). */
export type WebhookVerifier = (
  headers: IncomingHttpHeaders,
  rawBody: string,
) => { readonly valid: boolean; readonly events: WebhookEvent[] };

export interface WebhookReceiverOptions {
  /** Without it every request is valid and its events are read from the JSON body. */
  readonly verify?: WebhookVerifier;
  /**
   * Keep every request in `requests` (true, the default: suites check them). A benchmark that
   * receives millions of events turns it off and reads `counts` only.
   */
  readonly record?: boolean;
  readonly host?: string;
}

/**
 * A backend's webhook endpoint: verifies each request (when given a verifier), records it and
 * counts its events. `answer` decides the status of each valid request (200 unless told
 * otherwise; an invalid one gets 401); `down()` / `up()` close and reopen the port, so deliveries
 * meet a refused connection meanwhile.
 */
export class WebhookReceiver {
  readonly requests: ReceivedHook[] = [];
  readonly counts: WebhookCounts = { requests: 0, events: 0, byName: {}, malformed: 0 };
  answer: (hook: ReceivedHook) => number = () => 200;
  private server: Server | undefined;
  private port = 0;
  private readonly host: string;

  constructor(private readonly options: WebhookReceiverOptions = {}) {
    this.host = options.host ?? '127.0.0.1';
  }

  get url(): string {
    return `http://${this.host}:${this.port}/hooks`;
  }

  /** Requests answered 2xx with a valid signature: what the backend processed. */
  get accepted(): ReceivedHook[] {
    return this.requests.filter((r) => r.valid && r.status >= 200 && r.status < 300);
  }

  /** Events of accepted requests, each delivery id counted once (the receiver deduplicates). */
  events(): ReceivedHook['events'] {
    const seen = new Set<string>();
    const out: ReceivedHook['events'] = [];
    for (const hook of this.accepted) {
      if (seen.has(hook.delivery)) continue;
      seen.add(hook.delivery);
      out.push(...hook.events);
    }
    return out;
  }

  /** Listens (on a free port the first time, on the same port after `down`). */
  async up(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const { valid, events } = this.options.verify?.(req.headers, rawBody) ?? this.readBody(rawBody);
    this.counts.requests += 1;
    for (const event of events) {
      this.counts.events += 1;
      const name = String(event.name);
      this.counts.byName[name] = (this.counts.byName[name] ?? 0) + 1;
    }
    const pending: ReceivedHook = {
      delivery: String(req.headers['x-switchboard-delivery'] ?? ''),
      valid,
      status: 0,
      events: valid ? events : [],
    };
    const status = valid ? this.answer(pending) : 401;
    if (this.options.record !== false) this.requests.push({ ...pending, status });
    res.writeHead(status).end();
  }

  /** The events of an unsigned batch; a body that is no batch is counted as malformed. */
  private readBody(rawBody: string): { valid: boolean; events: WebhookEvent[] } {
    try {
      const body = JSON.parse(rawBody) as { events?: WebhookEvent[] };
      return { valid: true, events: body.events ?? [] };
    } catch {
      this.counts.malformed += 1;
      return { valid: true, events: [] };
    }
  }
}
