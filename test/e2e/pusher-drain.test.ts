/**
 * Drain behind the load balancer (HAProxy from deploy/haproxy.cfg, two gateway processes, one
 * Redis): a gateway that gets SIGTERM closes its Pusher sockets with `pusher:error` 4200, and
 * `pusher-js` reconnects at once, through the balancer, to the other gateway, subscribes again
 * and receives what the backend triggers next.
 */
import { BalancedCluster } from '@switchboard/harness';
import { pusherBackend } from '@switchboard/testing';
import PusherJs from 'pusher-js';
import type { Channel } from 'pusher-js';

let cluster: BalancedCluster;
const clients: PusherJs[] = [];

beforeAll(async () => {
  cluster = await BalancedCluster.start({ names: ['gw1', 'gw2'], checkIntervalMs: 150 });
}, 60_000);

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await cluster?.stop();
});

it('closes with 4200 on drain; pusher-js reconnects to the other gateway and keeps receiving', async () => {
  const { key } = cluster.key;
  const backend = pusherBackend(cluster.key, cluster.balancerPort);
  /** Per client: the codes of the pusher:error frames it received. */
  const codes: number[][] = [];
  let firstDrained: () => void = () => undefined;
  const drained = new Promise<void>((resolve) => (firstDrained = resolve));
  const channels: Channel[] = [];
  for (let i = 0; i < 4; i++) {
    const client = new PusherJs(key, {
      cluster: 'local',
      wsHost: '127.0.0.1',
      wsPort: cluster.balancerPort,
      forceTLS: false,
      enabledTransports: ['ws'],
    });
    clients.push(client);
    const own: number[] = [];
    codes.push(own);
    client.connection.bind('error', (error: { data?: { code?: number } }) => {
      if (typeof error.data?.code !== 'number') return;
      own.push(error.data.code);
      if (error.data.code === 4200) firstDrained();
    });
    const channel = client.subscribe('drained');
    await new Promise((resolve) => channel.bind('pusher:subscription_succeeded', resolve));
    channels.push(channel);
  }
  const before = clients.map((client) => client.connection.socket_id);

  const gw1 = cluster.nodes.get('gw1')!;
  gw1.kill('SIGTERM');
  await drained;
  await gw1.exited;

  // Each client gw1 closed (4200) is connected again with a new socket id, on gw2, and subscribed.
  const closed = clients.filter((_client, i) => codes[i]?.includes(4200));
  expect(closed.length).toBeGreaterThan(0);
  await Promise.all(
    clients.map(
      (client, i) =>
        new Promise<void>((resolve) => {
          const ready = (): boolean =>
            client.connection.state === 'connected' &&
            (channels[i]?.subscribed ?? false) &&
            (!codes[i]?.includes(4200) || client.connection.socket_id !== before[i]);
          if (ready()) return resolve();
          const check = (): void => {
            if (ready()) resolve();
          };
          client.connection.bind('state_change', check);
          channels[i]?.bind('pusher:subscription_succeeded', check);
        }),
    ),
  );

  const received = channels.map((channel) => new Promise((resolve) => channel.bind('after', resolve)));
  await backend.trigger('drained', 'after', { n: 1 });
  expect(await Promise.all(received)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }, { n: 1 }]);
}, 60_000);
