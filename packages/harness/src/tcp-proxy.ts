import { createConnection, createServer } from 'node:net';
import type { Socket } from 'node:net';

/**
 * A TCP forwarder on a free port of 127.0.0.1, as a managed Redis's single endpoint behaves:
 * `retarget` points it at another server and drops every open connection, so clients reconnect
 * to the same address and reach the new one (the promoted replica).
 */
export interface TcpProxy {
  readonly port: number;
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, host = '127.0.0.1'): Promise<TcpProxy> {
  let target = targetPort;
  const open = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = createConnection(target, host);
    open.add(inbound);
    open.add(outbound);
    const drop = (): void => {
      inbound.destroy();
      outbound.destroy();
      open.delete(inbound);
      open.delete(outbound);
    };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const dropAll = (): void => {
    for (const socket of open) socket.destroy();
    open.clear();
  };
  return {
    port,
    retarget: (next) => {
      target = next;
      dropAll();
    },
    close: async () => {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
