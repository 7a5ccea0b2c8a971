// The recovery scenario's section of docs/benchmarks.md.
import { int } from '../../lib/format';
import { SCRIPT_CALLS } from '../../lib/redis-info';
import type { Results, Target } from '../../results';
import { RECOVERY_TARGET_SECONDS } from './run';
import type { RecoveryResult } from './run';

/** Script calls per recovering client: each is one command, its inner commands count apart. */
function scriptsPerClient(m: RecoveryResult): string {
  const count = (calls: Record<string, number>): number =>
    SCRIPT_CALLS.reduce((sum, c) => sum + (calls[c] ?? 0), 0);
  return ((count(m.redisCalls) - count(m.baselineCalls)) / m.clients).toFixed(2);
}

export function recoverySection(r: Results): string[] {
  const rec = r.recovery;
  if (!rec) return [];
  const m = rec.median;
  const s = m.status;
  const totalCalls = (calls: Record<string, number>): number =>
    Object.values(calls).reduce((a, b) => a + b, 0);
  const commands = Object.keys({ ...m.redisCalls, ...m.baselineCalls }).sort(
    (a, b) => (m.redisCalls[b] ?? 0) - (m.redisCalls[a] ?? 0),
  );
  return [
    '## Recovery',
    '',
    `${int(m.clients)} V3 clients opted in (\`recover=1\`) on channel \`${m.channel}\` of gateway A, 2 gateways + Redis. Each follows the recovery flow of docs/protocol.md (packages/harness/src/resume-recorder.ts, Node clients on raw sockets in ${rec.meta.options.workers} processes): it remembers the epoch of its latest \`system::position\` and the offset of its latest publication, and on a close from 4000 to 4499 reconnects at once (no backoff) to gateway B with \`since\` and \`epoch\`. First ${int(m.publications)} publications go out through B's REST with every client connected (the baseline: live delivery, and Redis' commands for the publications alone); then A gets SIGTERM (its drain closes every socket with 4000) and ${int(m.publications)} more go out through B, one every 5 ms, starting at the SIGTERM. Timed from the SIGTERM until every client had every one of them (arrival times taken by the clients on the shared monotonic clock). Redis commands: \`INFO commandstats\` on the redis-server (commands run by scripts included) over the drain phase, minus the baseline's for the same number of publications, divided by the clients.`,
    '',
    '| Measure | Value |',
    '|---|---|',
    `| every client has every publication, after the SIGTERM | ${m.completeSeconds !== undefined ? `${m.completeSeconds.toFixed(2)} s` : `⚠ not reached (${int(s?.complete)}/${int(m.clients)})`} (target < ${RECOVERY_TARGET_SECONDS} s)${rec.runs.length > 1 ? `; runs: ${rec.runs.map((x) => (x.completeSeconds !== undefined ? `${x.completeSeconds.toFixed(2)} s` : 'incomplete')).join(', ')}` : ''} |`,
    `| the publishes (through B, paced) took | ${m.publishSeconds.toFixed(2)} s; complete ${m.afterLastPublishSeconds?.toFixed(2) ?? '–'} s after the last one was answered |`,
    `| reconnects; resumed \`recovered: true\` / \`false\` | ${int(s?.reconnects)}; ${int(s?.recovered)} / ${int(s?.unrecovered)} |`,
    `| first reconnect → last resumed position frame | ${m.resumeSpreadSeconds !== undefined ? `${m.resumeSpreadSeconds.toFixed(2)} s` : '–'} |`,
    `| duplicates, out-of-order publications, epoch changes | ${int(s?.duplicates)}, ${int(s?.outOfOrder)}, ${int(s?.epochChanges)} |`,
    `| Redis commands over the drain phase / baseline for the same publications | ${int(totalCalls(m.redisCalls))} / ${int(totalCalls(m.baselineCalls))} |`,
    `| **Redis commands per recovering client** | **${m.redisCallsPerClient?.toFixed(2) ?? '–'}** (of which script calls, EVAL/EVALSHA: ${scriptsPerClient(m)}) |`,
    `| CPU over the drain phase: gateway B / Redis / the client processes | ${m.cpu ? `${m.cpu.gatewayB.toFixed(2)} s / ${m.cpu.redis.toFixed(2)} s / ${m.cpu.clients?.toFixed(2) ?? '–'} s` : '–'} |`,
    '',
    `Commands (drain phase / baseline): ${commands.map((c) => `${c} ${int(m.redisCalls[c] ?? 0)} / ${int(m.baselineCalls[c] ?? 0)}`).join(' · ')}${m.error ? `\n\n⚠ ${m.error}` : ''}`,
    '',
  ];
}

/** The recovery scenario's rows of the verdict table. */
export function recoveryTargets(r: Results): Target[] {
  const out: Target[] = [];
  const rec = r.recovery?.median;
  if (rec) {
    const met =
      rec.completeSeconds === undefined || rec.error ? false : rec.completeSeconds < RECOVERY_TARGET_SECONDS;
    out.push({
      name: `Recovery, ${int(rec.clients)} opted-in clients drained off a gateway while ${int(rec.publications)} publications go out`,
      goal: `every client has every publication < ${RECOVERY_TARGET_SECONDS} s after the drain began`,
      measured:
        rec.completeSeconds !== undefined
          ? `${rec.completeSeconds.toFixed(2)} s (${int(rec.status?.complete)}/${int(rec.clients)} clients, ${int(rec.status?.duplicates)} duplicates, ${int(rec.status?.outOfOrder)} out of order); ${rec.redisCallsPerClient?.toFixed(1) ?? '–'} Redis commands per recovering client`
          : `not every client had every publication (${int(rec.status?.complete)}/${int(rec.clients)})${rec.error ? `: ${rec.error.slice(0, 100)}` : ''}`,
      met,
      gap: met
        ? '–'
        : rec.completeSeconds !== undefined
          ? `${(rec.completeSeconds - RECOVERY_TARGET_SECONDS).toFixed(2)} s`
          : 'incomplete',
    });
  }
  return out;
}
