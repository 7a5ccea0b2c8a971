// The scale scenario's section of docs/benchmarks.md.
import { int, ms, ratio } from '../../lib/format';
import type { Results, Target } from '../../results';
import { SCALE_TARGETS } from './run';
import type { ScaleSystem } from './run';

export function scaleSection(r: Results): string[] {
  const scale = r.scale?.result;
  if (!scale) return [];
  const of = (name: ScaleSystem['system']): ScaleSystem | undefined =>
    scale.systems.find((x) => x.system === name);
  const sb = of('switchboard-redis');
  const ceiling = of('ceiling-redis');
  const cell = (x: ScaleSystem | undefined, f: (x: ScaleSystem) => string): string => (x ? f(x) : '–');
  const q = (a: number | undefined, b: number | undefined): string => ratio(a, b)?.toFixed(2) ?? '–';
  // The last delivery cannot come before the CPU the publish needs, spread over every CPU.
  const cpus = r.scale?.meta.machine.nproc ?? 1;
  const floor = (x: ScaleSystem): string =>
    x.publish?.cpu ? `${int(((x.publish.cpu.servers + x.publish.cpu.clients) * 1000) / cpus)} ms` : '–';
  const cpuCell = (x: ScaleSystem): string =>
    x.publish?.cpu
      ? `${int(x.publish.cpu.servers * 1000)} ms / ${x.publish.serverCpuUsPerDelivery.toFixed(2)} µs / ${x.publish.netServerCpuUsPerDelivery?.toFixed(2) ?? '–'} µs (${int(x.publish.cpu.clients * 1000)} ms)`
      : '–';
  const layout =
    scale.nodes > scale.requestedNodes
      ? `${scale.nodes} servers instead of ${scale.requestedNodes}: one process here can open at most ${int(scale.reachableFdLimit)} files (its hard limit; raising it needs CAP_SYS_RESOURCE, and the harness never changes the machine's settings), so ${int(scale.connections)} sockets need ${scale.nodes} processes of about ${int(scale.connections / scale.nodes)}`
      : `${scale.nodes} servers of ${int(scale.connections / scale.nodes)} sockets each`;
  return [
    '## Scale',
    '',
    `${int(scale.connections)} WebSocket connections open at once on this machine, all on one channel, spread over ${layout}, + Redis. Opened by ${scale.clients} \`connect-load\` processes, each binding its sockets to ${scale.sourcesPerClient} source addresses of its own in 127.0.0.0/8 so the ephemeral ports (about 28,000 per source address and destination) never run out. Then ${sb?.publishes.length ?? 0} publishes to the channel, one at a time, each timed from the publish request to its arrival on every socket; then a members page on a channel of ${int(scale.members)} members. Switchboard (V4 sockets, \`POST /api/v4/publish\`, history on) right after the Redis-hop ceiling in the same run: \`npm run bench -- --scenario scale\` (about 3 minutes; not in the default run).`,
    '',
    '| Measure | Switchboard | Ceiling (raw uWS + Redis hop) | Ratio |',
    '|---|---|---|---|',
    `| Connect all: open / seconds / per second | ${cell(sb, (x) => `${int(x.connect.ok)} / ${ms(x.connect.seconds)} s / ${int(x.connect.perSecond)}/s`)} | ${cell(ceiling, (x) => `${int(x.connect.ok)} / ${ms(x.connect.seconds)} s / ${int(x.connect.perSecond)}/s`)} | ${q(sb?.connect.seconds, ceiling?.connect.seconds)}× the time |`,
    `| CPU s over the connect: servers / Redis / clients | ${cell(sb, (x) => `${x.connect.cpu.servers.toFixed(1)} / ${x.connect.cpu.redis.toFixed(1)} / ${x.connect.cpu.clients.toFixed(1)}`)} | ${cell(ceiling, (x) => `${x.connect.cpu.servers.toFixed(1)} / ${x.connect.cpu.redis.toFixed(1)} / ${x.connect.cpu.clients.toFixed(1)}`)} | ${q(sb?.connect.cpu.servers, ceiling?.connect.cpu.servers)}× server CPU |`,
    `| RSS per connection (all servers' growth / connections) | ${cell(sb, (x) => `${x.rssKiBPerConnection.toFixed(2)} KiB (${x.rss.map((n) => `${(n.beforeKiB / 1024).toFixed(0)}→${(n.afterKiB / 1024).toFixed(0)}`).join(', ')} MiB)`)} | ${cell(ceiling, (x) => `${x.rssKiBPerConnection.toFixed(2)} KiB (${x.rss.map((n) => `${(n.beforeKiB / 1024).toFixed(0)}→${(n.afterKiB / 1024).toFixed(0)}`).join(', ')} MiB)`)} | ${q(sb?.rssKiBPerConnection, ceiling?.rssKiBPerConnection)}× |`,
    `| One publish to all: delivered / p50 / p99 / max (median publish by p99) | ${cell(sb, (x) => (x.publish ? `${int(x.publish.seen)}/${int(x.publish.open)} / ${ms(x.publish.p50Ms)} / ${ms(x.publish.p99Ms)} / ${ms(x.publish.maxMs)} ms` : '–'))} | ${cell(ceiling, (x) => (x.publish ? `${int(x.publish.seen)}/${int(x.publish.open)} / ${ms(x.publish.p50Ms)} / ${ms(x.publish.p99Ms)} / ${ms(x.publish.maxMs)} ms` : '–'))} | ${q(sb?.publish?.p99Ms, ceiling?.publish?.p99Ms)}× p99 |`,
    `| Server CPU during the median publish: ms / µs per delivery / less idle (clients' CPU) | ${cell(sb, cpuCell)} | ${cell(ceiling, cpuCell)} | ${q(sb?.publish?.netServerCpuUsPerDelivery, ceiling?.publish?.netServerCpuUsPerDelivery)}× net server CPU |`,
    `| CPU floor of the median publish: (servers + clients CPU) / ${cpus} CPUs | ${cell(sb, (x) => floor(x))} | ${cell(ceiling, (x) => floor(x))} | – |`,
    `| Every publish: p99 (ms) | ${cell(sb, (x) => x.publishes.map((p) => ms(p.p99Ms)).join(', '))} | ${cell(ceiling, (x) => x.publishes.map((p) => ms(p.p99Ms)).join(', '))} | – |`,
    `| Members page (page 1, limit 100) on ${int(scale.members)} members: median / p95 | ${cell(sb, (x) => (x.members ? `${ms(x.members.medianMs)} / ${ms(x.members.p95Ms)} ms (count ${int(x.members.count)}; filled in ${ms(x.members.fillSeconds)} s)` : '–'))} | ${cell(ceiling, (x) => (x.members ? `${ms(x.members.medianMs)} / ${ms(x.members.p95Ms)} ms (one ZRANGE of 100)` : '–'))} | ${q(sb?.members?.medianMs, ceiling?.members?.medianMs)}× the time |`,
    `| Presence join into that channel (a real V4 socket, connect to its member list): median / max | ${cell(sb, (x) => (x.members?.joins ? `${ms(x.members.joins.medianMs)} / ${ms(x.members.joins.maxMs)} ms (${x.members.joins.joined} of ${x.members.joins.count} joined)` : '–'))} | – | – |`,
    `| Errors | ${cell(sb, (x) => (x.errors.length ? x.errors.join('; ').slice(0, 300) : 'none'))} | ${cell(ceiling, (x) => (x.errors.length ? x.errors.join('; ').slice(0, 300) : 'none'))} | – |`,
    '',
    `Publish to delivery is taken on one clock: the harness reads CLOCK_MONOTONIC just before it sends the HTTP publish, and each \`connect-load\` process records, per socket, when the first frame holding the publish's marker arrived (same clock); the percentiles are over every socket. "Less idle" takes off what the servers spend with every socket open and nothing published (pings, timers; measured over 2 s before the publishes) for as long as the publish took. The CPU floor is the least time the publish could take on this machine with its CPU use, every core busy with nothing else: on a 2-core machine it is most of the latency, and the same for the ceiling, since loopback TCP runs the receiver's input in the sender's send. The ${int(scale.members)}-member presence channel holds ${int(scale.members - (sb?.members?.joins?.count ?? 0))} members written through the product's own presence store (the Lua script a gateway runs on a join; the fill time is shown) and ${sb?.members?.joins?.count ?? 0} real V4 sockets with \`presence=1\` that join last, one at a time, each timed to its \`system::member_list\`: joining all ${int(scale.members)} through sockets would send each \`member_joined\` to every member already there, ~50 million frames, which measures the clients more than the gateway (the presence section measures join rates). The product runs with its defaults: no connection limits (\`MAX_CONNECTIONS_PER_NODE\`, \`MAX_CONNECTIONS_PER_KEY\`, \`NEW_CONNECTIONS_PER_SECOND_PER_IP\` are 0, unlimited), the product's Node flags, each server process's open-file limit raised by the harness (\`ulimit -n\`) to its share of sockets + 1,024 (a quarter of the reachable limit when that is small).`,
    '',
  ];
}

/** The scale scenario's rows of the verdict table. */
export function scaleTargets(r: Results): Target[] {
  const out: Target[] = [];
  const scale = r.scale?.result;
  const sb = scale?.systems.find((x) => x.system === 'switchboard-redis');
  if (scale && sb) {
    const at = `${int(sb.connections)} connections on ${scale.nodes} nodes + Redis`;
    const rssMet =
      sb.connect.ok > 0 ? sb.rssKiBPerConnection <= SCALE_TARGETS.rssKiBPerConnection : undefined;
    out.push({
      name: `Scale: RSS per connection, ${at}`,
      goal: `≤ ${SCALE_TARGETS.rssKiBPerConnection} KiB`,
      measured: `${sb.rssKiBPerConnection.toFixed(2)} KiB (${int(sb.connect.ok)} open)`,
      met: rssMet,
      gap:
        rssMet === false
          ? `${(sb.rssKiBPerConnection - SCALE_TARGETS.rssKiBPerConnection).toFixed(2)} KiB`
          : '–',
    });
    const pub = sb.publish;
    const ceilingPub = scale.systems.find((x) => x.system === 'ceiling-redis')?.publish;
    const pubMet = pub ? pub.p99Ms < SCALE_TARGETS.publishP99Ms && pub.seen === pub.open : undefined;
    out.push({
      name: `Scale: one publish delivered to every socket, ${at}`,
      goal: `p99 < ${SCALE_TARGETS.publishP99Ms} ms from publish to delivery`,
      measured: pub
        ? `p50 ${ms(pub.p50Ms)} ms, p99 ${ms(pub.p99Ms)} ms to ${int(pub.seen)}/${int(pub.open)} sockets (median of ${sb.publishes.length} publishes by p99: ${sb.publishes.map((x) => ms(x.p99Ms)).join(', ')} ms); the ceiling in the same run: p99 ${ms(ceilingPub?.p99Ms)} ms`
        : 'no publish',
      met: pubMet,
      gap: pubMet === false && pub ? `${ms(pub.p99Ms - SCALE_TARGETS.publishP99Ms)} ms` : '–',
    });
    const clean = sb.errors.length === 0 && sb.connect.ok === sb.connections;
    out.push({
      name: `Scale: no errors, ${at}`,
      goal: 'every connection opens and stays open, every publish reaches every socket, no error logged',
      measured: clean ? 'none' : sb.errors.join('; ').slice(0, 300),
      met: clean,
      gap: clean ? '–' : `${sb.errors.length} kinds of error`,
    });
  }
  return out;
}
