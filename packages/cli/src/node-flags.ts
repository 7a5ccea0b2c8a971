/**
 * Node flags every Switchboard process is started with: the shebang of `main.ts`, `npm start`
 * and the Docker image's entrypoint all pass them (`node-flags.test.ts` keeps those in step), and
 * the benchmark starts gateways with them too.
 *
 * `--max-semi-space-size=8` caps V8's young generation at 8 MiB per semi-space instead of Node
 * 20's 16. A gateway's heap is mostly long-lived per-connection state; under a connection burst
 * V8 grows the young generation to its cap and keeps it, which cost about 14 MiB of RSS at 10,000
 * connections (1.4 KiB each) and bought no throughput: fan-out, many channels and presence joins
 * measured the same with either cap (docs/benchmarks.md).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
