import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAccountApi } from './app';
import type { AccountApiDeps } from './app';

export interface RunningAccountApi {
  /** The port actually bound (`ACCOUNT_PORT`, or a random one when it is 0). */
  readonly port: number;
  /** Stops accepting, ends idle keep-alive connections and resolves when in-flight requests finished. The engine stays open: its owner closes it. */
  close(): Promise<void>;
}

/** Serves `createAccountApi(deps)` on `config.accountPort` and `config.host`. */
export async function startAccountApi(deps: AccountApiDeps): Promise<RunningAccountApi> {
  const server = createServer(createAccountApi(deps));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.accountPort, deps.config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    port,
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
