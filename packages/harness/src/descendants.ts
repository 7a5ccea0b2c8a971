import { readdirSync, readFileSync } from 'node:fs';

/*
 * The process harness of a command that starts other processes (the benchmark, the soak run):
 * nothing it started may outlive it, whether it ends by Ctrl-C, SIGTERM or a failure.
 */

/** Every live descendant of `root` (children, grandchildren…), from /proc; zombies left out. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      const siblings = children.get(Number(ppid)) ?? [];
      siblings.push(Number(name));
      children.set(Number(ppid), siblings);
    } catch {
      // The process ended while being read.
    }
  }
  const found: number[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * Stops every process this one started, however deep (gateways, Redis, client and publisher
 * workers, ceiling servers): SIGTERM to each (gateways drain), then SIGKILL to what is left after
 * `graceMs`. Processes started meanwhile by a scenario still running get the same. Resolves once
 * none is left.
 */
export async function stopDescendants(graceMs = 5000): Promise<void> {
  const signalled = new Set<number>();
  const deadline = Date.now() + graceMs;
  for (;;) {
    const left = descendants(process.pid);
    if (left.length === 0) return;
    const late = Date.now() > deadline;
    for (const pid of left) {
      if (!late && signalled.has(pid)) continue;
      signalled.add(pid);
      try {
        process.kill(pid, late ? 'SIGKILL' : 'SIGTERM');
      } catch {
        // It exited meanwhile.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Runs `main` as the command `name`. Ctrl-C or SIGTERM stops every process it started (see
 * `stopDescendants`), then ends this one by the same signal, so npm and shells see how it ended.
 * A failure is printed, the processes it started are stopped, and the command exits with
 * `failureExitCode`; once interrupted, failures of the work being stopped are expected and not
 * printed.
 */
export function runMain(name: string, main: () => Promise<void>, failureExitCode: number): void {
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`${name}: ${signal}; stopping the processes it started\n`);
    void stopDescendants().then(() => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.kill(process.pid, signal);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  main().catch((error: unknown) => {
    if (interrupted) return;
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    void stopDescendants().then(() => process.exit(failureExitCode));
  });
}
