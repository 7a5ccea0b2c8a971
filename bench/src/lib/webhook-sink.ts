import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HOST } from './procs';

/** What a `WebhookSink` received. */
export interface SinkCounts {
  requests: number;
  events: number;
  /** Events per name (`member_added`, `channel_occupied`…). */
  byName: Record<string, number>;
  /** Requests whose body did not parse as a batch. */
  malformed: number;
}

/**
 * A backend's webhook endpoint for the benchmark: answers every POST 200 at once and counts
 * requests and events (no signature check: the e2e tests verify signatures; here only the cost of
 * producing and delivering the events matters). Runs in the harness process.
 */
export class WebhookSink {
  private server: Server | undefined;
  private port = 0;
  readonly counts: SinkCounts = { requests: 0, events: 0, byName: {}, malformed: 0 };

  get url(): string {
    return `http://${HOST}:${this.port}/hooks`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.counts.requests += 1;
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            events?: Array<{ name?: string }>;
          };
          for (const event of body.events ?? []) {
            this.counts.events += 1;
            const name = String(event.name);
            this.counts.byName[name] = (this.counts.byName[name] ?? 0) + 1;
          }
        } catch {
          this.counts.malformed += 1;
        }
        res.writeHead(200).end();
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, HOST, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
