/**
 * `npm run soak [-- options]`: 2 gateways and Redis under 20,000 sockets that churn for ten
 * minutes, with presence, publishes and kicks. Records each gateway's RSS, heap and event-loop lag
 * every 10 s and exits 1 when the heap grew after warm-up or the cluster's counts drifted from the
 * sockets really open. Writes bench/results/soak-<date>.json and .svg. See docs/reliability.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { gitCommit, machine } from '../lib/machine';
import { runMain } from '@switchboard/harness';
import { ROOT, product } from '../lib/procs';
import { soakSvg } from './plot';
import { soakSummary } from './summary';
import { DEFAULT_SOAK, runSoak } from './soak';
import type { SoakOptions } from './soak';

export function parseSoakArgs(argv: string[]): Omit<SoakOptions, 'log'> & { out: string } {
  const o = { ...DEFAULT_SOAK, out: join(ROOT, 'bench', 'results') };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const num = (): number => {
      const n = Number(value());
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a number`);
      return n;
    };
    // --duration takes seconds, or minutes with an "m" (10m).
    const seconds = (): number => {
      const v = value();
      const n = v.endsWith('m') ? Number(v.slice(0, -1)) * 60 : Number(v.replace(/s$/, ''));
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} needs a duration such as 600 or 10m`);
      return n;
    };
    switch (flag) {
      case '--duration':
        o.durationS = seconds();
        break;
      case '--connections':
        o.connections = Math.floor(num());
        break;
      case '--churn':
        o.churn = num();
        break;
      case '--publish-rate':
        o.publishRate = num();
        break;
      case '--channels':
        o.channels = Math.max(1, Math.floor(num()));
        break;
      case '--kick-key-connections':
        o.kickKeyConnections = Math.floor(num());
        break;
      case '--sample':
        o.sampleS = seconds();
        break;
      case '--checkpoint':
        o.checkpointS = seconds();
        break;
      case '--workers':
        o.workers = Math.max(1, Math.floor(num()));
        break;
      case '--max-growth':
        o.maxGrowth = num() / 100;
        break;
      case '--seed':
        o.seed = Math.floor(num());
        break;
      case '--out':
        o.out = resolve(value());
        break;
      case '--product-dir':
        product.dir = resolve(value());
        break;
      default:
        throw new Error(
          `unknown option ${flag}; options: --duration 600|10m --connections N --churn N --publish-rate N --channels N ` +
            '--kick-key-connections N --sample S --checkpoint S --workers N --max-growth PERCENT --seed N --out DIR --product-dir DIR',
        );
    }
  }
  if (o.kickKeyConnections > o.connections) o.kickKeyConnections = o.connections;
  return o;
}

async function main(): Promise<void> {
  const { out, ...options } = parseSoakArgs(process.argv.slice(2));
  const startedAt = new Date();
  const m = machine();
  const log = (line: string): void => console.log(line);
  log(`load average at start: ${m.loadAverage.join(' / ')} (${m.nproc} CPUs)`);
  const result = await runSoak({ ...options, log });
  const finishedAt = new Date();
  const loadAverageAtEnd = loadavg().map((l) => Math.round(l * 100) / 100);
  const meta = {
    command: `npm run soak${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    seconds: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
    machine: m,
    loadAverageAtEnd,
    productCommit: gitCommit(product.dir),
  };
  mkdirSync(out, { recursive: true });
  const stamp = startedAt.toISOString().slice(0, 16).replace(':', '');
  const base = join(out, `soak-${stamp}`);
  writeFileSync(`${base}.json`, `${JSON.stringify({ meta, ...result }, null, 1)}\n`);
  writeFileSync(
    `${base}.svg`,
    soakSvg(
      result,
      `Soak: ${options.connections.toLocaleString('en-US')} sockets, churn ${options.churn}/s, ${options.durationS >= 120 ? `${Math.round(options.durationS / 60)} min` : `${options.durationS} s`}, 2 gateways + Redis`,
    ),
  );
  const pct = (g: number): string => `${(g * 100).toFixed(1)} %`;
  log('');
  result.heap.forEach((h, i) =>
    log(
      `${result.nodes[i]!.nodeId}: heap floor ${(h.baselineBytes / 2 ** 20).toFixed(1)} → ${(h.finalBytes / 2 ** 20).toFixed(1)} MiB (${pct(h.growth)})`,
    ),
  );
  const c = result.counters;
  log(
    `sockets: ${c.opened} opened, ${c.closedByClient} closed by the client, ${c.failed} failed, server closes ${JSON.stringify(c.gone)}`,
  );
  log(
    `kicks: ${result.kicks.keyKicks} key kicks, ${result.kicks.userKicks} user kicks, ${result.kicks.kickedSockets} sockets kicked (+${result.kicks.lateKicked} opened meanwhile), ${result.kicks.wrong} wrong, ${result.kicks.missed} missed`,
  );
  log(
    `publishes: ${result.publishes.sent} sent, ${result.publishes.failed} failed, ${result.publishes.skipped} skipped (all publishers busy)`,
  );
  log(`load average at end: ${loadAverageAtEnd.join(' / ')}`);
  const summary = soakSummary(result, meta, `../bench/results/soak-${stamp}.svg`);
  writeFileSync(`${base}.md`, summary);
  log(`wrote ${base}.json, .svg and .md (the figures for docs/reliability.md)`);
  log(result.verdict.ok ? 'PASS' : `FAIL\n  ${result.verdict.reasons.join('\n  ')}`);
  process.exit(result.verdict.ok ? 0 : 1);
}

if (require.main === module) runMain('soak', main, 2);
