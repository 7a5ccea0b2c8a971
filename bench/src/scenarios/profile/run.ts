import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ClientFleet, Publisher } from '../../lib/fleet';
import { ROOT, product, startSystem } from '../../lib/procs';
import { nowUs } from '../../lib/payload';
import { step, subscriberUrls } from '../load';
import type { Step } from '../load';

export interface ProfileEntry {
  function: string;
  location: string;
  selfPercent: number;
  /** Share of the samples that were not `(idle)`. */
  busyPercent: number;
}

export interface ProfileResult {
  rate: number;
  subscribers: number;
  seconds: number;
  load?: Step;
  /** Per gateway node: top self-time functions. */
  nodes: NodeProfile[];
  /**
   * The publish path (issue 12): many channels × 2 subscribers over REST, where a publish is
   * delivered to only 2 sockets and the REST, key, engine and log work per publish dominates.
   */
  publishPath?: {
    channels: number;
    rate: number;
    load?: Step;
    /** The load's time span: only its samples are counted. */
    window?: { fromUs: number; toUs: number };
    nodes: NodeProfile[];
  };
  /** The same gateways profiled while V4 presence clients join (channels of 10) and leave. */
  presence?: { joins: number; joinSeconds: number; nodes: NodeProfile[] };
  error?: string;
}

export interface NodeProfile {
  node: string;
  samples: number;
  idlePercent: number;
  top: ProfileEntry[];
  byFile: ProfileEntry[];
}

interface CpuProfile {
  startTime: number;
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

function shorten(url: string): string {
  if (!url) return '(native)';
  const path = url.replace(/^file:\/\//, '');
  for (const base of [product.dir, ROOT]) {
    if (path.startsWith(base)) return relative(base, path);
  }
  return path;
}

/**
 * Self time per function and per file. `window` (µs of CLOCK_MONOTONIC, the clock V8 stamps
 * samples with on Linux, as `nowUs`) keeps only the samples taken in it: the load, without the
 * start-up and the connections before it.
 */
export function analyseProfile(
  file: string,
  topN: number,
  window?: { fromUs: number; toUs: number },
): { samples: number; idlePercent: number; top: ProfileEntry[]; byFile: ProfileEntry[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  let idle = 0;
  let at = profile.startTime;
  let kept = 0;
  profile.samples.forEach((id, i) => {
    const weight = profile.timeDeltas[i] ?? 0;
    at += weight;
    if (window && (at < window.fromUs || at > window.toUs)) return;
    kept++;
    const node = byId.get(id);
    if (!node) return;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') idle += weight;
    const location = `${shorten(url)}${url ? `:${lineNumber + 1}` : ''}`;
    const label = `${functionName || '(anonymous)'}\u0000${location}`;
    self.set(label, (self.get(label) ?? 0) + weight);
    const fileKey = url ? shorten(url) : functionName || '(native)';
    files.set(fileKey, (files.get(fileKey) ?? 0) + weight);
    total += weight;
  });
  const rank = (map: Map<string, number>, split: boolean): ProfileEntry[] =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([label, weight]) => {
        const [fn, location] = split ? label.split('\u0000') : ['', label];
        return {
          function: fn ?? '',
          location: location ?? '',
          selfPercent: (100 * weight) / Math.max(1, total),
          busyPercent: fn === '(idle)' || label === '(idle)' ? 0 : (100 * weight) / Math.max(1, total - idle),
        };
      });
  return {
    samples: kept,
    idlePercent: (100 * idle) / Math.max(1, total),
    top: rank(self, true),
    byFile: rank(files, false),
  };
}

/** Fan-out on 2 nodes + Redis with `--cpu-prof` on both gateways; the profiles are read back. */
export async function profileScenario(o: {
  rate: number;
  subscribers: number;
  seconds: number;
  workers: number;
  presenceJoins: number;
  /** The publish-path profile: channels (× 2 subscribers) and publishes per second. */
  publishChannels: number;
  publishRate: number;
  dir: string;
  log: (line: string) => void;
}): Promise<ProfileResult> {
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(o.dir, { recursive: true });
  const result: ProfileResult = { rate: o.rate, subscribers: o.subscribers, seconds: o.seconds, nodes: [] };
  const system = await startSystem('switchboard-redis', {
    nodes: 2,
    nodeOptions: `--cpu-prof --cpu-prof-dir=${o.dir}`,
  });
  const fleet = new ClientFleet(o.workers);
  const publisher = new Publisher();
  try {
    const channels = ['profile'];
    const opened = await fleet.connect(subscriberUrls(system, channels, o.subscribers), { concurrency: 200 });
    o.log(`  ${opened.ok} subscribers; publishing ${o.rate}/s for ${o.seconds} s under --cpu-prof`);
    result.load = await step(
      {
        system,
        fleet,
        publisher,
        channels,
        subscribersPerChannel: o.subscribers,
        maxP99Ms: 1e9,
        publishConnections: 16,
      },
      o.rate,
      o.seconds * 1000,
    );
  } catch (error) {
    result.error = String(error);
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    publisher.stop();
    await system.stop();
  }
  const files = readdirSync(o.dir).filter((f) => f.endsWith('.cpuprofile'));
  for (const file of files) {
    const analysed = analyseProfile(join(o.dir, file), 25);
    result.nodes.push({ node: file, ...analysed });
  }
  if (files.length === 0) result.error = `${result.error ?? ''} no .cpuprofile written in ${o.dir}`;
  result.publishPath = await publishPathProfile(o, join(o.dir, 'publish'));
  // Presence joins under the profiler.
  const presenceDir = join(o.dir, 'presence');
  mkdirSync(presenceDir, { recursive: true });
  const again = await startSystem('switchboard-redis', {
    nodes: 2,
    nodeOptions: `--cpu-prof --cpu-prof-dir=${presenceDir}`,
  });
  const clients = new ClientFleet(o.workers);
  let joins = 0;
  let joinSeconds = 0;
  try {
    const urls = Array.from({ length: o.presenceJoins }, (_, i) =>
      again.wsUrl(i, 'v4', `pres-${Math.floor(i / 10)}`, `&presence=1&user=u${i}`),
    );
    const joined = await clients.connect(urls, { concurrency: 400, joinMarker: 'system::member_list' });
    joins = joined.joined;
    joinSeconds = joined.joinSeconds;
    o.log(`  presence under --cpu-prof: ${joins} joins in ${joinSeconds.toFixed(2)} s`);
    await clients.closeAll();
    await new Promise((r) => setTimeout(r, 1000));
  } catch (error) {
    result.error = `${result.error ?? ''} presence: ${String(error)}`;
  } finally {
    await clients.closeAll().catch(() => undefined);
    clients.stop();
    await again.stop();
  }
  result.presence = {
    joins,
    joinSeconds,
    nodes: readdirSync(presenceDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((file) => ({ node: file, ...analyseProfile(join(presenceDir, file), 25) })),
  };
  return result;
}

async function publishPathProfile(
  o: {
    publishChannels: number;
    publishRate: number;
    seconds: number;
    workers: number;
    log: (line: string) => void;
  },
  dir: string,
): Promise<NonNullable<ProfileResult['publishPath']>> {
  mkdirSync(dir, { recursive: true });
  const out: NonNullable<ProfileResult['publishPath']> = {
    channels: o.publishChannels,
    rate: o.publishRate,
    nodes: [],
  };
  const system = await startSystem('switchboard-redis', {
    nodes: 2,
    nodeOptions: `--cpu-prof --cpu-prof-dir=${dir}`,
  });
  const fleet = new ClientFleet(o.workers);
  const publisher = new Publisher();
  try {
    const channels = Array.from({ length: o.publishChannels }, (_, i) => `pp-${i}`);
    await fleet.connect(subscriberUrls(system, channels, 2), { concurrency: 200 });
    o.log(
      `  publish path: ${channels.length} channels × 2, ${o.publishRate}/s for ${o.seconds} s under --cpu-prof`,
    );
    const fromUs = nowUs();
    out.load = await step(
      { system, fleet, publisher, channels, subscribersPerChannel: 2, maxP99Ms: 1e9, publishConnections: 64 },
      o.publishRate,
      o.seconds * 1000,
    );
    out.window = { fromUs, toUs: nowUs() };
  } finally {
    await fleet.closeAll().catch(() => undefined);
    fleet.stop();
    publisher.stop();
    await system.stop();
  }
  out.nodes = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((file) => ({ node: file, ...analyseProfile(join(dir, file), 30, out.window) }));
  return out;
}
