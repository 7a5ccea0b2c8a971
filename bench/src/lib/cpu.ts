import { cpuSeconds } from './procs';
import type { System } from './procs';

/** CPU seconds (user + system) of a system's server processes, its redis-server and the load generator's processes. */
export interface CpuUse {
  servers: number;
  redis: number;
  clients: number;
}

/** What each group of processes used so far: subtract two readings (`cpuSince`) for a span. */
export function cpuOf(system: System, fleet: { readonly pids: readonly number[] }): CpuUse {
  return {
    servers: system.nodes.reduce((sum, n) => sum + cpuSeconds(n.pid), 0),
    redis: system.redisPid ? cpuSeconds(system.redisPid) : 0,
    clients: fleet.pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0),
  };
}

export const cpuSince = (before: CpuUse, after: CpuUse): CpuUse => ({
  servers: after.servers - before.servers,
  redis: after.redis - before.redis,
  clients: after.clients - before.clients,
});
