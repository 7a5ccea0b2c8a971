/**
 * `npm run bench [-- options]`: starts real gateway processes, Redis and the uWS ceiling servers,
 * drives them with WebSocket clients in separate processes, and writes bench/results/*.json and
 * docs/benchmarks.md. Every loop is bounded in count and time. See docs/benchmarks.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fleetDefaults } from './lib/fleet';
import { PUSHER_MAX_BATCH } from './lib/pusher-protocol';
import { connectDefaults } from './lib/native-fleet';
import { gitCommit, machine } from './lib/machine';
import { resultsDir as resultsDirOf } from './lib/results-dir';
import { runMain } from '@switchboard/harness';
import { ROOT, onRedis, product, serverRuntime } from './lib/procs';
import type { SystemName } from './lib/procs';
import { connectCostRun, medianConnectCostRun } from './scenarios/connect-cost/run';
import type { ConnectCostRun } from './scenarios/connect-cost/run';
import { memoryCase } from './scenarios/memory/run';
import type { MemoryCase } from './scenarios/memory/run';
import { presenceScenario } from './scenarios/presence/run';
import { PUSHER_SYSTEMS, pusherScenario } from './scenarios/pusher/run';
import type { PresenceResult } from './scenarios/presence/run';
import { profileScenario } from './scenarios/profile/run';
import { publishCostScenario } from './scenarios/publish-cost/run';
import type { CostVariant } from './scenarios/publish-cost/run';
import { recoveryScenario } from './scenarios/recovery/run';
import type { RecoveryResult } from './scenarios/recovery/run';
import { scaleScenario } from './scenarios/scale/run';
import { TARGET_SHARE, throughputCase } from './scenarios/throughput/run';
import type { ThroughputCase } from './scenarios/throughput/run';
import { writeReport } from './report';
import type { Meta, Options, Results, ThroughputShape } from './results';

// Each Switchboard system right after its ceiling: a pair sees the same machine, and Switchboard
// is also measured at the ceiling's rates (the target share of its maximum, its half maximum).
const ALL_SYSTEMS: SystemName[] = [
  'ceiling-redis',
  'switchboard-redis',
  'switchboard-redis-history-off',
  'ceiling-uws',
  'switchboard-memory',
];
const DEFAULT_SCENARIOS = [
  'fanout',
  'channels',
  'publish-cost',
  'recovery',
  'connect-cost',
  'presence',
  'memory',
];
/** Scenarios run only when named (`--scenario scale`): each takes several minutes. */
const EXTRA_SCENARIOS = ['profile', 'scale', 'pusher'];
const COST_VARIANTS: CostVariant[] = [
  'ceiling',
  'script-floor',
  'history-on',
  'history-off',
  'history-on-opted-in',
];

function parseArgs(argv: string[]): Options {
  const o: Options = {
    scenarios: DEFAULT_SCENARIOS,
    durationS: 1.25,
    stepS: 1,
    refine: 2,
    runs: 1,
    sizes: [1000, 5000],
    channels: 2000,
    idle: 10_000,
    presencePerNode: 10000,
    members: 10_000,
    workers: 2,
    maxP99Ms: 500,
    systems: ALL_SYSTEMS,
    profileRate: 300,
    profileSeconds: 10,
    costRate: 500,
    costSeconds: 5,
    costWarmupSeconds: 20,
    costRounds: 6,
    costVariants: COST_VARIANTS,
    recoveryClients: 1000,
    recoveryPublications: 100,
    scaleConnections: 100_000,
    scaleNodes: 2,
    scalePublishes: 3,
    connectConnections: 10_000,
    docs: true,
    quick: false,
    client: 'raw',
    pusherPresence: 4000,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const num = (): number => {
      const n = Number(value());
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} needs a positive number`);
      return n;
    };
    switch (flag) {
      case '--scenario':
      case '--scenarios': {
        const v = value();
        o.scenarios = v === 'all' ? [...DEFAULT_SCENARIOS, ...EXTRA_SCENARIOS] : v.split(',');
        break;
      }
      case '--duration':
        o.durationS = num();
        break;
      case '--step':
        o.stepS = num();
        break;
      case '--refine':
        o.refine = Math.floor(num());
        break;
      case '--runs':
        o.runs = Math.min(9, Math.floor(num()));
        break;
      case '--sizes':
        o.sizes = value().split(',').map(Number);
        break;
      case '--channels':
        o.channels = Math.floor(num());
        break;
      case '--idle':
        o.idle = Math.floor(num());
        break;
      case '--presence-per-node':
        o.presencePerNode = Math.floor(num());
        break;
      case '--members':
        o.members = Math.floor(num());
        break;
      case '--workers':
        o.workers = Math.floor(num());
        break;
      case '--max-p99':
        o.maxP99Ms = num();
        break;
      case '--systems':
        o.systems = value().split(',') as SystemName[];
        break;
      case '--profile-rate':
        o.profileRate = num();
        break;
      case '--profile-seconds':
        o.profileSeconds = num();
        break;
      case '--cost-rate':
        o.costRate = num();
        break;
      case '--cost-seconds':
        o.costSeconds = num();
        break;
      case '--cost-warmup':
        o.costWarmupSeconds = num();
        break;
      case '--cost-rounds':
        o.costRounds = Math.floor(num());
        break;
      case '--cost-variants':
        o.costVariants = value().split(',') as CostVariant[];
        for (const v of o.costVariants)
          if (!COST_VARIANTS.includes(v)) throw new Error(`--cost-variants: unknown ${v}`);
        break;
      case '--cost-node-flags':
        o.costNodeFlags = value();
        break;
      case '--recovery-clients':
        o.recoveryClients = Math.floor(num());
        break;
      case '--recovery-publications':
        o.recoveryPublications = Math.floor(num());
        break;
      case '--scale-connections':
        o.scaleConnections = Math.floor(num());
        break;
      case '--scale-nodes':
        o.scaleNodes = Math.floor(num());
        break;
      case '--scale-publishes':
        o.scalePublishes = Math.floor(num());
        break;
      case '--connect-connections':
        o.connectConnections = Math.floor(num());
        break;
      case '--pusher-systems':
        o.pusherSystems = value().split(',') as SystemName[];
        for (const v of o.pusherSystems)
          if (!PUSHER_SYSTEMS.includes(v)) throw new Error(`--pusher-systems: unknown ${v}`);
        break;
      case '--pusher-batch':
        o.pusherBatch = Math.min(PUSHER_MAX_BATCH, Math.floor(num()));
        break;
      case '--pusher-presence':
        o.pusherPresence = Math.floor(num());
        break;
      case '--product-dir':
        product.dir = resolve(value());
        break;
      case '--client': {
        const v = value();
        if (v !== 'raw' && v !== 'ws') throw new Error('--client is raw or ws');
        o.client = v;
        fleetDefaults.client = v;
        break;
      }
      case '--connect-client': {
        const v = value();
        if (v !== 'native' && v !== 'node') throw new Error('--connect-client is native or node');
        connectDefaults.client = v;
        break;
      }
      case '--runtime': {
        const runtime = value();
        if (!/^node\d+$/.test(runtime)) throw new Error(`--runtime takes node22, node24…, not ${runtime}`);
        o.runtime = runtime;
        break;
      }
      case '--report-only':
        o.scenarios = [];
        break;
      case '--no-docs':
        o.docs = false;
        break;
      case '--quick':
        Object.assign(o, {
          sizes: [200],
          channels: 100,
          idle: 300,
          presencePerNode: 100,
          members: 1000,
          durationS: 0.5,
          stepS: 0.5,
          costSeconds: 2,
          costRounds: 2,
          recoveryClients: 100,
          recoveryPublications: 20,
          scaleConnections: 2000,
          connectConnections: 1000,
          pusherPresence: 200,
          refine: 1,
          quick: true,
          docs: false,
        });
        break;
      case '--help':
        console.log(readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8').split('## Options')[1] ?? '');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${flag} (see docs/benchmarks.md)`);
    }
  }
  for (const s of o.scenarios) {
    if (![...DEFAULT_SCENARIOS, ...EXTRA_SCENARIOS].includes(s)) throw new Error(`unknown scenario ${s}`);
  }
  return o;
}

const log = (line: string): void => console.log(line);

function medianCase(runs: ThroughputCase[]): ThroughputCase {
  const sorted = [...runs].sort(
    (a, b) => (a.max?.deliveriesPerSecond ?? 0) - (b.max?.deliveriesPerSecond ?? 0),
  );
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

async function throughputShapes(kind: 'fanout' | 'channels', o: Options): Promise<ThroughputShape[]> {
  const shapes =
    kind === 'fanout'
      ? o.sizes.map((n) => ({
          label: `1 channel × ${n.toLocaleString('en-US')} subscribers`,
          channels: 1,
          subs: n,
        }))
      : [
          {
            label: `${o.channels.toLocaleString('en-US')} channels × 2 subscribers`,
            channels: o.channels,
            subs: 2,
          },
        ];
  const out: ThroughputShape[] = [];
  for (const shape of shapes) {
    log(`${kind}: ${shape.label}`);
    const result: ThroughputShape = {
      label: shape.label,
      channels: shape.channels,
      subscribersPerChannel: shape.subs,
      runs: {},
      median: {},
    };
    for (let run = 0; run < o.runs; run++) {
      for (const system of o.systems) {
        const ceiling =
          system === 'switchboard-redis' || system === 'switchboard-redis-history-off'
            ? result.runs['ceiling-redis']?.[run]
            : system === 'switchboard-memory'
              ? result.runs['ceiling-uws']?.[run]
              : undefined;
        const sameRate = ceiling?.half?.rate;
        const targetRate = ceiling?.max?.pass
          ? Math.max(1, Math.round(ceiling.max.rate * TARGET_SHARE[kind]))
          : undefined;
        const c = await throughputCase({
          system,
          nodes: onRedis(system) ? 2 : 1,
          channels: shape.channels,
          subscribersPerChannel: shape.subs,
          channelPrefix: kind === 'fanout' ? 'fan' : 'many',
          workers: o.workers,
          fixedDeliveries: kind === 'fanout' ? 20_000 : 10_000,
          startDeliveries: kind === 'fanout' ? 800_000 : 24_000,
          ...(sameRate ? { sameRate } : {}),
          ...(targetRate ? { targetRate } : {}),
          durationMs: o.durationS * 1000,
          stepMs: o.stepS * 1000,
          refine: o.refine,
          maxP99Ms: o.maxP99Ms,
          log,
        });
        (result.runs[system] ??= []).push(c);
      }
    }
    for (const system of o.systems) {
      const runs = result.runs[system];
      if (runs?.length) result.median[system] = medianCase(runs);
    }
    out.push(result);
  }
  return out;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  if (o.runtime) {
    o.scenarios = o.scenarios.filter((s) => s === 'fanout' || s === 'channels');
    if (o.scenarios.length === 0)
      throw new Error('--runtime measures the fanout and channels scenarios only');
    const major = o.runtime.slice('node'.length);
    const root = process.env['NEWER_RUNTIME_ROOT'];
    if (!root) {
      // Prepares and mounts the Debian 13 root with that Node.js, runs this same command with
      // NEWER_RUNTIME_ROOT set, and unmounts (docs/benchmarks.md, "Node.js 24 beside Node.js 20").
      const script = join(ROOT, '.ci', 'newer-runtimes.sh');
      const args = ['--run', major, '--', process.execPath, ...process.argv.slice(1)];
      process.exit(spawnSync(script, args, { stdio: 'inherit' }).status ?? 1);
    }
    serverRuntime.root = root;
    serverRuntime.node = `/opt/node${major}/bin/node`;
    serverRuntime.version = execFileSync('chroot', [root, serverRuntime.node, '--version'], {
      encoding: 'utf8',
    }).trim();
  }
  const resultsDir = resultsDirOf(ROOT, o);
  mkdirSync(resultsDir, { recursive: true });
  const latestPath = join(resultsDir, 'latest.json');
  const latest: Results = existsSync(latestPath)
    ? (JSON.parse(readFileSync(latestPath, 'utf8')) as Results)
    : {};
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const startedAt = new Date();
  const m = machine();
  log(
    `machine: ${m.nproc} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, load ${m.loadAverage.join(' ')}`,
  );
  log(`product under test: ${product.dir} (${gitCommit(product.dir)})`);
  if (serverRuntime.root)
    log(`servers on ${o.runtime} in ${serverRuntime.root} (load generators on Node ${m.node})`);
  const hardStop = setTimeout(() => {
    console.error('bench: hard time limit reached (2 h); exiting');
    process.exit(2);
  }, 2 * 3600_000);
  hardStop.unref();
  const meta = (): Meta => ({
    command,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: m,
    loadAverageAtEnd: machine().loadAverage,
    productCommit: gitCommit(product.dir),
    productDir: product.dir,
    options: o,
    ...(serverRuntime.version ? { serverNode: serverRuntime.version } : {}),
  });
  const date = startedAt.toISOString().slice(0, 10);
  const save = (scenario: keyof Results, value: Results[keyof Results]): void => {
    (latest as Record<string, unknown>)[scenario] = value;
    writeFileSync(join(resultsDir, `${date}-${scenario}.json`), `${JSON.stringify(value, null, 2)}\n`);
    writeFileSync(latestPath, `${JSON.stringify(latest, null, 2)}\n`);
  };
  for (const scenario of o.scenarios) {
    const t0 = Date.now();
    if ((scenario === 'fanout' || scenario === 'channels') && o.runtime) {
      const shapes = await throughputShapes(scenario, o);
      ((latest.runtimes ??= {})[o.runtime] ??= {})[scenario] = { meta: meta(), shapes };
      writeFileSync(
        join(resultsDir, `${date}-${scenario}-${o.runtime}.json`),
        `${JSON.stringify({ meta: meta(), shapes }, null, 2)}\n`,
      );
      writeFileSync(latestPath, `${JSON.stringify(latest, null, 2)}\n`);
    } else if (scenario === 'fanout' || scenario === 'channels') {
      const shapes = await throughputShapes(scenario, o);
      save(scenario, { meta: meta(), shapes });
    } else if (scenario === 'pusher') {
      const pusher = await pusherScenario({
        systems: o.pusherSystems ?? PUSHER_SYSTEMS,
        fanoutSubscribers: o.sizes[0] ?? 1000,
        channels: o.channels,
        runs: o.runs,
        workers: o.workers,
        durationMs: o.durationS * 1000,
        stepMs: o.stepS * 1000,
        refine: o.refine,
        maxP99Ms: o.maxP99Ms,
        idle: o.idle,
        presenceJoins: o.pusherPresence,
        publishBatch: o.pusherBatch ?? PUSHER_MAX_BATCH,
        log,
      });
      save('pusher', { meta: meta(), ...pusher });
    } else if (scenario === 'publish-cost') {
      const channels = o.quick ? o.channels : 2000;
      log(
        `publish-cost: ${channels} channels × 2 subscribers at ${o.costRate} publishes/s over REST, 2 nodes + Redis (${o.costVariants.join(', ')}): each row in ${o.costRounds} pairs of ${o.costSeconds} s with the ceiling, after ${o.quick ? Math.min(o.costWarmupSeconds, o.costSeconds) : o.costWarmupSeconds} s of warm-up${o.runs > 1 ? ` × ${o.runs} runs` : ''}`,
      );
      const costWarmup = o.quick ? Math.min(o.costWarmupSeconds, o.costSeconds) : o.costWarmupSeconds;
      const runs = await publishCostScenario({
        channels,
        subscribersPerChannel: 2,
        rate: o.costRate,
        seconds: o.costSeconds,
        warmupSeconds: costWarmup,
        workers: o.workers,
        variants: o.costVariants,
        ...(o.costNodeFlags ? { nodeOptions: o.costNodeFlags } : {}),
        runs: o.runs,
        rounds: o.costRounds,
        log,
      });
      save('publish-cost', {
        meta: meta(),
        channels,
        subscribersPerChannel: 2,
        rate: o.costRate,
        seconds: o.costSeconds,
        warmupSeconds: costWarmup,
        rounds: o.costRounds,
        runs,
      });
    } else if (scenario === 'recovery') {
      log(
        `recovery: ${o.recoveryClients} opted-in clients on gateway A of 2; A drained while ${o.recoveryPublications} publications go out through B × ${o.runs} runs`,
      );
      const runs: RecoveryResult[] = [];
      for (let run = 0; run < o.runs; run++) {
        runs.push(
          await recoveryScenario({
            clients: o.recoveryClients,
            publications: o.recoveryPublications,
            publishIntervalMs: 5,
            workers: o.workers,
            timeoutMs: 20_000,
            log,
          }),
        );
      }
      const sorted = [...runs].sort(
        (x, y) => (x.completeSeconds ?? Infinity) - (y.completeSeconds ?? Infinity),
      );
      save('recovery', { meta: meta(), runs, median: sorted[Math.floor((sorted.length - 1) / 2)]! });
    } else if (scenario === 'connect-cost') {
      log(
        `connect-cost: ${o.connectConnections} plain V3 connections opened, then closed, on 2 nodes + Redis (ceiling, then Switchboard) × ${o.runs} runs`,
      );
      const runs: ConnectCostRun[] = [];
      for (let run = 0; run < o.runs; run++)
        runs.push(await connectCostRun({ connections: o.connectConnections, workers: o.workers, log }));
      const median = medianConnectCostRun(runs);
      save('connect-cost', {
        meta: meta(),
        connections: o.connectConnections,
        runs,
        ...(median ? { median } : {}),
      });
    } else if (scenario === 'presence') {
      log(
        `presence: ${o.presencePerNode} V4 presence joins per node on 2 nodes + Redis; members page of ${o.members}`,
      );
      const runs: PresenceResult[] = [];
      for (let run = 0; run < o.runs; run++) {
        runs.push(
          await presenceScenario({
            connectionsPerNode: o.presencePerNode,
            channelSize: 10,
            members: o.members,
            requests: 300,
            workers: o.workers,
            log,
          }),
        );
      }
      const joinRate = (r: PresenceResult): number => r.ownCore?.perSecond ?? r.joins?.perSecond ?? 0;
      const sorted = [...runs].sort((a, b) => joinRate(a) - joinRate(b));
      save('presence', { meta: meta(), runs, median: sorted[Math.floor((sorted.length - 1) / 2)]! });
    } else if (scenario === 'memory') {
      log(`memory: ${o.idle} idle connections on one node`);
      const cases: MemoryCase[] = [];
      const channels = Math.max(1, Math.floor(o.idle / 10));
      const settleMs = 1500;
      for (const [system, protocol, nodeDefaults] of [
        ['switchboard-redis', 'v3', false],
        ['switchboard-redis', 'v4', false],
        ['switchboard-memory', 'v3', false],
        ['switchboard-redis', 'v3', true],
        ['ceiling-uws', 'v3', false],
        ['ceiling-redis', 'v3', false],
        // Only when named (`--systems switchboard-pusher`): the Pusher scenario's idle-memory row
        // (the same case) without its throughput and presence parts.
        ['switchboard-pusher', 'v3', false],
      ] as const) {
        if (!o.systems.includes(system)) continue;
        cases.push(
          await memoryCase(
            system,
            protocol,
            { connections: o.idle, channels, workers: o.workers, settleMs, log },
            nodeDefaults,
          ),
        );
      }
      save('memory', { meta: meta(), cases });
    } else if (scenario === 'scale') {
      log(
        `scale: ${o.scaleConnections} connections on one channel over ${o.scaleNodes} servers + Redis, ${o.scalePublishes} publishes to all, a members page of ${o.members}; the Redis-hop ceiling, then Switchboard`,
      );
      const result = await scaleScenario({
        connections: o.scaleConnections,
        nodes: o.scaleNodes,
        members: o.members,
        publishes: o.scalePublishes,
        log,
      });
      save('scale', { meta: meta(), result });
    } else if (scenario === 'profile') {
      log(
        `profile: fan-out 1 channel × ${o.sizes[0]} subscribers at ${o.profileRate} publishes/s, --cpu-prof on both gateways`,
      );
      const result = await profileScenario({
        rate: o.profileRate,
        subscribers: o.sizes[0] ?? 1000,
        seconds: o.profileSeconds,
        workers: o.workers,
        presenceJoins: o.presencePerNode * 2,
        publishChannels: o.channels,
        publishRate: o.costRate * 4,
        dir: join(resultsDir, 'tmp', 'profiles'),
        log,
      });
      if (result.load)
        log(
          `  gateways used ${result.load.cpu.servers.toFixed(1)} CPU-s, Redis ${result.load.cpu.redis.toFixed(1)} CPU-s in ${result.load.cpu.wallSeconds.toFixed(1)} s`,
        );
      for (const node of result.nodes) {
        log(`  ${node.node} (${node.samples} samples), top self time:`);
        for (const entry of node.top.slice(0, 15))
          log(`    ${entry.selfPercent.toFixed(1).padStart(5)}%  ${entry.function}  ${entry.location}`);
      }
      for (const node of result.publishPath?.nodes ?? []) {
        log(
          `  publish path ${node.node} (${node.idlePercent.toFixed(0)}% idle), top self time (% of all / % of busy):`,
        );
        for (const entry of node.top.slice(0, 30))
          log(
            `    ${entry.selfPercent.toFixed(1).padStart(5)}% ${entry.busyPercent.toFixed(1).padStart(5)}%  ${entry.function}  ${entry.location}`,
          );
      }
      for (const node of result.presence?.nodes ?? []) {
        log(
          `  presence ${node.node} (${node.idlePercent.toFixed(0)}% idle), top self time (% of all / % of busy):`,
        );
        for (const entry of node.top.slice(0, 16))
          log(
            `    ${entry.selfPercent.toFixed(1).padStart(5)}% ${entry.busyPercent.toFixed(1).padStart(5)}%  ${entry.function}  ${entry.location}`,
          );
      }
      save('profile', { meta: meta(), result });
    }
    log(`${scenario} done in ${Math.round((Date.now() - t0) / 1000)} s`);
  }
  if (o.docs) {
    writeReport(latest, join(ROOT, 'docs', 'benchmarks.md'), join(resultsDir, 'latest.svg'));
    log('wrote docs/benchmarks.md and bench/results/latest.svg');
  }
  log(`total ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s`);
  process.exit(0);
}

runMain('bench', main, 1);
