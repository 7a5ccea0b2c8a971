import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Pusher from 'pusher';

/** One request as the receiver saw it. */
export interface ReceivedHook {
  readonly delivery: string;
  readonly valid: boolean;
  readonly status: number;
  readonly events: Array<{ name: string; channel: string; user_id?: string; [field: string]: unknown }>;
}

/**
 * A backend's webhook endpoint: verifies every request with the official Pusher SDK's webhook
 * helper (key and HMAC-SHA256 signature of the raw body) and records it. `answer` decides the
 * status of each request (200 unless told otherwise); `down()` / `up()` close and reopen the
 * port, so deliveries meet a refused connection meanwhile.
 */
export class WebhookReceiver {
  readonly requests: ReceivedHook[] = [];
  answer: (hook: ReceivedHook) => number = () => 200;
  private server: Server | undefined;
  private port = 0;
  private readonly pusher: Pusher;

  constructor(key: string, secret: string) {
    // `cluster` only completes the options: verifying a webhook makes no request.
    this.pusher = new Pusher({ appId: '1', key, secret, cluster: 'mt1' });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
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

  async up(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
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
    const webhook = this.pusher.webhook({ headers: req.headers as Record<string, string>, rawBody });
    const valid = webhook.isValid();
    const pending: ReceivedHook = {
      delivery: String(req.headers['x-switchboard-delivery'] ?? ''),
      valid,
      status: 0,
      events: valid ? (webhook.getEvents() as unknown as ReceivedHook['events']) : [],
    };
    const status = valid ? this.answer(pending) : 401;
    this.requests.push({ ...pending, status });
    res.writeHead(status).end();
  }
}
