import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Pusher from 'pusher';

/** A request as the `pusher` server SDK sent it, captured by a real HTTP server. */
export interface CapturedRequest {
  readonly method: string;
  /** The path as sent, undecoded, without the query. */
  readonly path: string;
  /** The query string as sent, without `?`. */
  readonly query: string;
  readonly body: Buffer;
}

/**
 * A local HTTP server on port 0 that records every request and answers `{}` (what Pusher answers
 * a trigger), and a `pusher` SDK client pointed at it: the SDK signs its requests itself.
 */
export interface SdkHarness {
  readonly pusher: Pusher;
  readonly requests: CapturedRequest[];
  /** Runs `call` and returns the one request it made. */
  capture(call: (pusher: Pusher) => Promise<unknown>): Promise<CapturedRequest>;
  close(): Promise<void>;
}

export const APP = { appId: 'app-1', key: 'app-key', secret: 'app-secret' } as const;

function read(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

export async function startSdkHarness(
  app: { appId: string; key: string; secret: string } = APP,
  /** More options of the SDK client (`encryptionMasterKeyBase64`…). */
  extra: Record<string, unknown> = {},
): Promise<SdkHarness> {
  const requests: CapturedRequest[] = [];
  const server: Server = createServer((request, response) => {
    void read(request).then((body) => {
      const url = request.url ?? '/';
      const mark = url.indexOf('?');
      requests.push({
        method: request.method ?? '',
        path: mark < 0 ? url : url.slice(0, mark),
        query: mark < 0 ? '' : url.slice(mark + 1),
        body,
      });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const pusher = new Pusher({ ...app, ...extra, host: '127.0.0.1', port: String(port), useTLS: false });
  return {
    pusher,
    requests,
    async capture(call) {
      const before = requests.length;
      await call(pusher);
      const captured = requests[before];
      if (captured === undefined || requests.length !== before + 1)
        throw new Error(`expected one request, got ${requests.length - before}`);
      return captured;
    },
    close: () =>
      new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
