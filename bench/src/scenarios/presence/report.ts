// The presence scenario's section of docs/benchmarks.md and its rows of the verdict table.
import { int, ms, pct, ratio } from '../../lib/format';
import type { Results, Target } from '../../results';
import type { ConnectRate, PresenceResult, WebhookDelivery } from './run';

const hookedRate = (run: PresenceResult): number =>
  run.webhooks?.ownCore?.perSecondPerNode ?? run.webhooks?.joins?.perSecondPerNode ?? 0;

/**
 * The run with the median webhook-on rate. The presence scenario's `median` is the run with the
 * median webhook-off rate; the webhook-on target is judged on its own median, not on whatever
 * the webhook-on run beside that one measured.
 */
function medianHookedRun(runs: readonly PresenceResult[]): PresenceResult | undefined {
  const hooked = runs.filter((run) => run.webhooks?.ownCore || run.webhooks?.joins);
  return [...hooked].sort((a, b) => hookedRate(a) - hookedRate(b))[Math.floor((hooked.length - 1) / 2)];
}

/** Presence joins with the key's webhook on beside the same runs without (issue 14). */
function webhookJoinsSection(median: PresenceResult, runs: readonly PresenceResult[]): string[] {
  const p = medianHookedRun(runs) ?? median;
  const w = p.webhooks;
  if (!w) return [];
  const perRun = runs
    .filter((run) => run.webhooks)
    .map(
      (run) =>
        `${int(run.ownCore?.perSecondPerNode ?? run.joins?.perSecondPerNode)} / ${int(hookedRate(run))}`,
    );
  const delivery = (d: WebhookDelivery | undefined): string =>
    d
      ? `${int(d.events)} events in ${int(d.requests)} requests (member_added ${int(d.byName['member_added'])}, member_removed ${int(d.byName['member_removed'])}, channel_occupied ${int(d.byName['channel_occupied'])}, channel_vacated ${int(d.byName['channel_vacated'])}); ${d.depth === 0 ? 'queue drained' : `⚠ ${int(d.depth)} left in the queue`} ${ms(d.drainSeconds)} s after the last close${d.complete ? '' : ' ⚠ incomplete'}`
      : '–';
  const row = (
    label: string,
    off: ConnectRate | undefined,
    on: ConnectRate | undefined,
    d?: WebhookDelivery,
  ): string =>
    `| ${label} | ${int(off?.perSecondPerNode)} (${int(off?.serverCpuUsPerConnection)} µs) | ${int(on?.perSecondPerNode)} (${int(on?.serverCpuUsPerConnection)} µs) | ${pct(ratio(on?.perSecondPerNode, off?.perSecondPerNode))} | ${ratio(on?.serverCpuUsPerConnection, off?.serverCpuUsPerConnection)?.toFixed(2) ?? '–'}× | ${delivery(d)} |`;
  return [
    '### Webhooks on',
    '',
    "The same joins again with a webhook on the bench key (`SWITCHBOARD_KEYS` with `webhook.events` listing every event) to a receiver in the harness process that answers 200 at once and counts what it gets. Each join then also stores a `member_added` (and each new channel a `channel_occupied`) in the key's stream from the presence and counts scripts, and the key's dispatcher (on one of the gateways) reads the stream and POSTs batches of up to 100 while the joins go on. After the joins every socket is closed and the run waits until the stream is empty and the receiver has one `member_added` and one `member_removed` per join (warm-up included) and as many `channel_vacated` as `channel_occupied`. Each webhook-on run follows its webhook-off run directly.",
    '',
    '| Run | Joins/s per node, webhooks off (gateway CPU per join) | Webhooks on | On ÷ off | Gateway CPU per join, on ÷ off | Delivered |',
    '|---|---|---|---|---|---|',
    row('2 nodes, shared cores', p.joins, w.joins, w.joinsDelivery),
    row('1 node on its own core', p.ownCore, w.ownCore, w.ownCoreDelivery),
    '',
    `The table shows the run with the median webhook-on rate, which the target is judged on. Joins/s per node of every run, off / on (${p.ownCore ? '1 node on its own core' : '2 nodes'}): ${perRun.join(', ')}.`,
    '',
  ];
}

/** Issue 6's targets, each judged met or not with its gap, from a set of results. */

/** The presence section (joins, members page, webhooks). */
export function presenceSection(r: Results): string[] {
  const lines: string[] = [];
  const p = r.presence?.median;
  if (p) {
    lines.push(
      '## Presence',
      '',
      `V4 clients with \`presence=1\` and a distinct \`user\` each, in channels of ${p.channelSize}, spread over ${p.nodes} nodes + Redis; a join counts when the client receives its \`system::member_list\` (the entry is in Redis by then). Leaves: every socket closed at once, timed until the nodes' presence index sets in Redis are empty.`,
      '',
      '| Measure | Switchboard | Ceiling (same clients, raw uWS + Redis) | Ratio |',
      '|---|---|---|---|',
      `| Joins per second per node | ${int(p.joins?.perSecondPerNode)} (${int(p.joins?.ok)} in ${ms(p.joins?.seconds)} s${p.joins?.failed ? `, ${p.joins.failed} failed` : ''}) | ${int(p.ceilingConnects?.perSecondPerNode)} plain connections/s per node | ${pct(ratio(p.joins?.perSecondPerNode, p.ceilingConnects?.perSecondPerNode))} |`,
      `| Leaves per second per node | ${int(p.leaves?.perSecondPerNode)} (${int(p.leaves?.connections)} in ${ms(p.leaves?.seconds)} s${p.leaves && !p.leaves.complete ? ', incomplete' : ''}) | – | – |`,
      `| V4 members page (page 1, limit 100) on ${int(p.members?.members)} members: median / p95 | ${ms(p.members?.medianMs)} / ${ms(p.members?.p95Ms)} ms (count ${int(p.members?.count)}) | ${ms(p.ceilingMembers?.medianMs)} / ${ms(p.ceilingMembers?.p95Ms)} ms (HTTP + one ZRANGE of 100) | ${ratio(p.members?.medianMs, p.ceilingMembers?.medianMs)?.toFixed(2) ?? '–'}× the time |`,
      '',
      `The ${int(p.members?.members)}-member channel is filled through the product's own PresenceStore (the Lua script a gateway runs on a join), not by ${int(p.members?.members)} sockets: each join sends \`member_joined\` to every member, ~50 million frames for one channel of 10,000.`,
      '',
    );
    const cpuRow = (label: string, c: ConnectRate | undefined, what: string): string =>
      c
        ? `| ${label} | ${int(c.perSecondPerNode)} ${what}/s (${int(c.ok)} in ${ms(c.seconds)} s) | ${c.cpu.servers.toFixed(2)} / ${c.cpu.redis.toFixed(2)} / ${c.cpu.clients.toFixed(2)} | ${pct(c.cpu.servers / (c.seconds * Math.max(1, Math.round(c.perSecond / c.perSecondPerNode))))} | ${int(c.serverCpuUsPerConnection)} µs | ${int(c.perSecondPerNodeCore)}/s |`
        : `| ${label} | – | – | – | – | – |`;
    lines.push(
      'Where the CPU goes. On 2 cores the 2-node run is bound by the machine (both cores busy with two gateways, the client processes and Redis), so the benchmark also runs **one node pinned to a core of its own** (`taskset`), with Redis, the clients and the harness on the other core, and the same for the ceiling with plain connections. A node is one thread: its joins per second at a full core follow from its CPU per join.',
      '',
      '| Run | Rate per node | CPU s: gateways / Redis / clients | Gateway core busy | Gateway CPU per connection | At a full core |',
      '|---|---|---|---|---|---|',
      cpuRow('Switchboard, 2 nodes, shared cores: presence joins', p.joins, 'joins'),
      cpuRow('Switchboard, 1 node on its own core: presence joins', p.ownCore, 'joins'),
      cpuRow('Ceiling, 2 nodes, shared cores: plain connections', p.ceilingConnects, 'connections'),
      cpuRow('Ceiling, 1 node on its own core: plain connections', p.ownCoreCeiling, 'connections'),
      '',
      "A join costs the gateway the WebSocket upgrade and admission, one `presenceWrites` script call shared by the joins of its event-loop turn, the count change (summed per turn), the `system::member_list` to the joiner and `member_joined` to the channel on both nodes through Redis. Most of the difference to the ceiling is system calls: `strace -c` on a pinned gateway during 10,000 joins counted 3.9 `sendto` per join (the 101, the member list, and the `member_joined` frames, which uWS coalesces per socket within a loop iteration) where a plain connection needs one, and on loopback each send also runs the receiver's TCP input and wake-up in the sender (`perf record -e cpu-clock`: 40% of the gateway's CPU in the kernel).",
      '',
      p.connectClient === 'native'
        ? 'Connections in this section are opened by `bench/native/connect-load.c` (C, one epoll loop, the same handshake bytes; built with `cc` on first use): about 50 µs of client CPU per connection against about 180 µs for the Node client, so the load generator on the other core no longer sets the rate ("gateway core busy" shows how close the pinned node came to a full core). `--connect-client node` uses the Node clients.'
        : "Connections in this section were opened by the Node clients (`--connect-client node`, or no C compiler): they spend about as much CPU per connection as the gateway, so the own-core rate shows the load generator's core as much as the node's.",
      '',
    );
    lines.push(...webhookJoinsSection(p, r.presence?.runs ?? [p]));
    if (p.error) lines.push(`⚠ ${p.error}`, '');
  }
  return lines;
}

/** The presence scenario's rows of the verdict table. */
export function presenceTargets(r: Results): Target[] {
  const out: Target[] = [];
  const p = r.presence?.median;
  if (p?.joins) {
    // Judged on one node with a core of its own when measured: on a 2-core machine the 2-node
    // run shares both cores with the clients and Redis, so it shows the machine, not a node.
    const judged = p.ownCore ?? p.joins;
    const met = judged.perSecondPerNode >= 5000 && judged.failed === 0;
    const own = p.ownCore
      ? `${int(p.ownCore.perSecondPerNode)}/s on one node with a core of its own (${int(p.ownCore.serverCpuUsPerConnection)} µs gateway CPU per join: ${int(p.ownCore.perSecondPerNodeCore)}/s at full core); `
      : '';
    out.push({
      name: 'Presence joins through Redis',
      goal: '≥ 5,000 joins/s per node',
      measured: `${own}${int(p.joins.perSecondPerNode)}/s per node with ${p.nodes} nodes, clients and Redis sharing the cores`,
      met,
      gap: met ? '–' : `${int(5000 - judged.perSecondPerNode)} joins/s per node`,
    });
  }
  const hooked = (medianHookedRun(r.presence?.runs ?? []) ?? p)?.webhooks;
  if (hooked?.joins || hooked?.ownCore) {
    // Judged like the row above: on one node with a core of its own when measured.
    const judged = (hooked.ownCore ?? hooked.joins)!;
    const delivered = [hooked.ownCoreDelivery, hooked.joinsDelivery].every((d) => !d || d.complete);
    const met = judged.perSecondPerNode >= 5000 && judged.failed === 0 && delivered;
    const own = hooked.ownCore
      ? `${int(hooked.ownCore.perSecondPerNode)}/s on one node with a core of its own (${int(hooked.ownCore.serverCpuUsPerConnection)} µs gateway CPU per join: ${int(hooked.ownCore.perSecondPerNodeCore)}/s at full core); `
      : '';
    const shared = hooked.joins
      ? `${int(hooked.joins.perSecondPerNode)}/s per node with ${p!.nodes} nodes, clients and Redis sharing the cores`
      : '';
    out.push({
      name: 'Presence joins through Redis, webhooks on',
      goal: '≥ 5,000 joins/s per node, every event delivered',
      measured: `${own}${shared}${delivered ? '' : '; ⚠ not every event delivered'}`,
      met,
      gap: met
        ? '–'
        : judged.perSecondPerNode < 5000
          ? `${int(5000 - judged.perSecondPerNode)} joins/s per node`
          : 'events missing',
    });
  }
  if (p?.members) {
    const met = p.members.medianMs < 5 && p.members.count === p.members.members;
    out.push({
      name: `Members page on a ${int(p.members.members)}-member channel`,
      goal: '< 5 ms median',
      measured: `${ms(p.members.medianMs)} ms median (count ${int(p.members.count)})`,
      met,
      gap: met ? '–' : `${ms(p.members.medianMs - 5)} ms`,
    });
  }
  return out;
}
