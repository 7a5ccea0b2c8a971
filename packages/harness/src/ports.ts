import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const HOST = '127.0.0.1';
const taken = new Set<number>();

/** The kernel's ephemeral range (outgoing connections take their local ports from it). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    return [Number(low), Number(high)];
  } catch {
    return [49152, 65535]; // IANA's range (macOS, BSD)
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host: HOST, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A port that is free now and stays free while its server restarts: chosen outside the ephemeral
 * range, so no outgoing connection of this busy machine can take it while nothing listens on it
 * (a port from `listen(0)` can be taken that way between a SIGTERM and the restart). For servers
 * that must come back on the same port, such as the fixed backends of a load balancer.
 */
export async function fixedFreePort(): Promise<number> {
  const [ephemeralLow] = ephemeralRange();
  const low = 20_000;
  const high = Math.max(low + 1000, ephemeralLow) - 1;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (taken.has(port) || !(await bindable(port))) continue;
    taken.add(port);
    return port;
  }
  throw new Error(`no free port between ${low} and ${high}`);
}
