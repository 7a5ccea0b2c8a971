import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ClientFleet, Publisher } from '../lib/fleet';
import { ROOT, product, startSystem } from '../lib/procs';
import { step, subscriberUrls } from './load';
import type { Step } from './load';

export interface ProfileEntry {
  function: string;
  location: string;
  selfPercent: number;
}

export interface ProfileResult {
  rate: number;
  subscribers: number;
  seconds: number;
  load?: Step;
  /** Per gateway node: top self-time functions. */
  nodes: { node: string; samples: number; top: ProfileEntry[]; byFile: ProfileEntry[] }[];
  error?: string;
}

interface CpuProfile {
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

export function analyseProfile(
  file: string,
  topN: number,
): { samples: number; top: ProfileEntry[]; byFile: ProfileEntry[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const weight = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (!node) return;
    const { functionName, url, lineNumber } = node.callFrame;
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
        };
      });
  return { samples: profile.samples.length, top: rank(self, true), byFile: rank(files, false) };
}

/** Fan-out on 2 nodes + Redis with `--cpu-prof` on both gateways; the profiles are read back. */
export async function profileScenario(o: {
  rate: number;
  subscribers: number;
  seconds: number;
  workers: number;
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
  return result;
}
