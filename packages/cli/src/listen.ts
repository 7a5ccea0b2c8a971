import { createServer } from 'node:net';
import { SetupError, errorCode } from '@switchboard/core';

/** The variable that sets each port a process listens on. */
export type PortVariable = 'PORT' | 'ACCOUNT_PORT' | 'METRICS_PORT';

/** The variable that sets the address a port binds to (`METRICS_HOST` for the metrics port when set). */
export type HostVariable = 'HOST' | 'METRICS_HOST';

/**
 * Runs `listen`; a failure becomes a `SetupError` whose message names the port, the variable that
 * sets it and the fix. uWebSockets.js reports a failed bind without a reason: the reason is then
 * learned by binding the same address with Node for an instant.
 */
export async function listenOn<T>(
  variable: PortVariable,
  host: string,
  port: number,
  listen: () => Promise<T>,
  hostVariable: HostVariable = 'HOST',
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const code = errorCode(error) ?? (await bindFailure(host, port));
    throw new SetupError(describeListenFailure(code, variable, host, port, hostVariable), { cause: error });
  }
}

/** The error code of binding `host:port` now, or undefined when the bind succeeds. */
function bindFailure(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error) => resolve(errorCode(error) ?? 'EUNKNOWN'));
    server.listen(port, host, () => server.close(() => resolve(undefined)));
  });
}

export function describeListenFailure(
  code: string | undefined,
  variable: PortVariable,
  host: string,
  port: number,
  hostVariable: HostVariable = 'HOST',
): string {
  const anyAddress = `set ${hostVariable} to an address of this machine, or 0.0.0.0 for all of them`;
  switch (code) {
    case 'EADDRINUSE':
      return `port ${port} (${variable}) is already in use on ${host}: stop the other process or set ${variable}`;
    case 'EACCES':
      return `port ${port} (${variable}) needs privileges this process lacks to listen on ${host}: set ${variable} to a port above 1023`;
    case 'EADDRNOTAVAIL':
      return `${hostVariable} ${host} is not an address of this machine: ${anyAddress}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return `${hostVariable} ${host} does not resolve to an address: ${anyAddress}`;
    default:
      return `cannot listen on ${host}:${port} (${variable})${code ? `: ${code}` : ''}: check ${hostVariable} and ${variable}`;
  }
}
