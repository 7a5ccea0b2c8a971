// The profile scenario's section of docs/benchmarks.md.
import { int, lossText, ms } from '../../lib/format';
import type { Results } from '../../results';

/** The profile section (and its publish-path and presence parts). */
export function profileSection(r: Results): string[] {
  const lines: string[] = [];
  if (r.profile) {
    const pr = r.profile.result;
    lines.push(
      '## Profile',
      '',
      `\`--cpu-prof\` on both gateways (2 nodes + Redis), fan-out 1 channel × ${int(pr.subscribers)} subscribers at ${int(pr.rate)} publishes/s for ${pr.seconds} s${pr.load ? ` (${int(pr.load.deliveriesPerSecond)} deliveries/s, loss ${lossText(pr.load)}, p99 ${ms(pr.load.p99Ms)} ms)` : ''}. Self time as a share of all samples and of the non-idle samples. uWS does its socket writes in C++ inside the event loop, which V8 counts as \`(idle)\`/\`(program)\`: the JS shares are of the JS-visible work.${pr.load ? ` CPU during the load: gateways ${pr.load.cpu.servers.toFixed(1)} s, Redis ${pr.load.cpu.redis.toFixed(1)} s, in ${pr.load.cpu.wallSeconds.toFixed(1)} s.` : ''}`,
      '',
    );
    for (const node of pr.nodes) {
      lines.push(
        `### ${node.node} (${node.idlePercent.toFixed(0)}% idle)`,
        '',
        '| Self % of all | % of busy | Function | Location |',
        '|---|---|---|---|',
      );
      lines.push(
        ...node.top
          .slice(0, 20)
          .map(
            (e) =>
              `| ${e.selfPercent.toFixed(1)} | ${e.busyPercent.toFixed(1)} | \`${e.function}\` | ${e.location} |`,
          ),
      );
      lines.push(
        '',
        'By file: ' +
          node.byFile
            .slice(0, 10)
            .map((e) => `${e.location} ${e.selfPercent.toFixed(1)}%`)
            .join(' · '),
        '',
      );
    }
  }
  const pp = r.profile?.result.publishPath;
  if (pp) {
    lines.push(
      `### Publish path under the profiler: ${int(pp.channels)} channels × 2 subscribers at ${int(pp.rate)} publishes/s over REST`,
      '',
      `Only the samples taken during the load count (the connections before it are left out).${pp.load ? ` ${int(pp.load.deliveriesPerSecond)} deliveries/s, p99 ${ms(pp.load.p99Ms)} ms; CPU during the load: gateways ${pp.load.cpu.servers.toFixed(1)} s, Redis ${pp.load.cpu.redis.toFixed(1)} s, in ${pp.load.cpu.wallSeconds.toFixed(1)} s.` : ''} \`writeReply\` is uWS writing the HTTP answer (its send happens inside it); \`writev\` and \`writeUtf8String\` are the command connection's writes to Redis.`,
      '',
    );
    for (const node of pp.nodes) {
      lines.push(
        `#### ${node.node} (${node.idlePercent.toFixed(0)}% idle)`,
        '',
        '| Self % of all | % of busy | Function | Location |',
        '|---|---|---|---|',
        ...node.top
          .slice(0, 20)
          .map(
            (e) =>
              `| ${e.selfPercent.toFixed(1)} | ${e.busyPercent.toFixed(1)} | \`${e.function}\` | ${e.location} |`,
          ),
        '',
      );
    }
  }
  if (r.profile?.result.presence) {
    const pp = r.profile.result.presence;
    lines.push(
      `### Presence joins under the profiler: ${int(pp.joins)} V4 joins in ${ms(pp.joinSeconds)} s`,
      '',
    );
    for (const node of pp.nodes) {
      lines.push(
        `#### ${node.node} (${node.idlePercent.toFixed(0)}% idle)`,
        '',
        '| Self % of all | % of busy | Function | Location |',
        '|---|---|---|---|',
      );
      lines.push(
        ...node.top
          .slice(0, 15)
          .map(
            (e) =>
              `| ${e.selfPercent.toFixed(1)} | ${e.busyPercent.toFixed(1)} | \`${e.function}\` | ${e.location} |`,
          ),
      );
      lines.push('');
    }
  }
  return lines;
}
