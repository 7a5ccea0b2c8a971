import WebSocket from 'ws';
import { Waiters } from '@switchboard/harness';
import type { Entry, PositionEntry, PublicationEntry, Standing } from '@switchboard/harness';
import { Switchboard } from '@switchboard/client';
import type { ChaosCluster } from './cluster';
import type { ClientSpec, Protocol } from './plan';

/**
 * The clients: each a real @switchboard/client (reconnects with backoff and jitter, resumes every
 * channel with `since`/`epoch`), given a `ws` WebSocket class that also records every frame
 * each socket received and every subscribe it sent. The recording is what the checks read: the
 * wire, so a duplicate the client would silently drop still counts, and the sockets actually
 * open, whatever the client believes.
 */

/** One channel of a client, on the wire, across all its sockets. */
export class ChannelTrack {
  readonly entries: Entry[] = [];
  /** Frames that break the protocol (a publication before any position…). */
  readonly violations: string[] = [];
  /** The session whose position came last (the channel is live while that socket is open). */
  positionedSession = 0;
  epoch: string | undefined;
  offset = 0;

  constructor(
    readonly protocol: Protocol,
    readonly channel: string,
    readonly presence: boolean,
  ) {}

  get standing(): Standing | undefined {
    return this.epoch === undefined ? undefined : { epoch: this.epoch, offset: this.offset };
  }

  get positions(): PositionEntry[] {
    return this.entries.filter((entry): entry is PositionEntry => entry.kind === 'position');
  }

  get publications(): PublicationEntry[] {
    return this.entries.filter((entry): entry is PublicationEntry => entry.kind === 'publication');
  }
}

/** One WebSocket a client opened, as seen on the wire. */
export class SocketTap {
  readonly protocol: Protocol;
  /** The URL's channel: V3's only one, V4's primary. */
  readonly primary: string;
  readonly uuid: string | undefined;
  readonly user: string | undefined;
  readonly presence: boolean;
  readonly since: Standing | undefined;
  opened = false;
  closeCode: number | undefined;
  /** Channels subscribed on this socket: the primary once open, secondaries at `subscribe_success`. */
  readonly subscribed = new Set<string>();
  /** Channels that received their position on this socket. */
  readonly positioned = new Set<string>();
  /** Per secondary channel, the `system::subscribe` data sent on this socket (the last one). */
  readonly subscribes = new Map<string, Record<string, unknown>>();

  constructor(
    readonly session: number,
    url: string,
    readonly socket: WebSocket,
  ) {
    const parsed = new URL(url);
    const [, version, channel] = parsed.pathname.split('/');
    this.protocol = version === 'v3' ? 'v3' : 'v4';
    this.primary = decodeURIComponent(channel ?? '');
    const q = parsed.searchParams;
    this.uuid = q.get('uuid') ?? undefined;
    this.user = q.get('user') ?? undefined;
    this.presence = q.get('presence') === '1';
    const since = q.get('since');
    const epoch = q.get('epoch');
    this.since = since !== null && epoch !== null ? { epoch, offset: Number(since) } : undefined;
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }
}

/** The application's view: what the client library delivered and told. */
export interface AppTrack {
  readonly offsets: Array<{ epoch: string | undefined; offset: number | undefined; seq: unknown }>;
  readonly unrecovered: Array<{ epoch: string; offset: number }>;
  readonly recovered: Array<{ epoch: string; offset: number; missed: number }>;
}

export class ChaosClient {
  readonly sb: Switchboard;
  readonly taps: SocketTap[] = [];
  readonly tracks = new Map<string, ChannelTrack>();
  readonly app = new Map<string, AppTrack>();
  /** Errors the client reported: terminal closes, failed channels. */
  readonly errors: string[] = [];
  closedAt: number | undefined;
  readonly openedAt = Date.now();
  /** `system::subscribe_error` answers marked `retry: true` (the client subscribed again). */
  retriedSubscribes = 0;

  constructor(
    readonly spec: ClientSpec,
    cluster: ChaosCluster,
    private readonly changed: () => void,
  ) {
    const protocol: Protocol = spec.protocol === 3 ? 'v3' : 'v4';
    for (const sub of spec.subscriptions) {
      this.tracks.set(sub.channel, new ChannelTrack(protocol, sub.channel, sub.presence));
      this.app.set(sub.channel, { offsets: [], unrecovered: [], recovered: [] });
    }
    this.sb = new Switchboard({
      url: cluster.balancerWsUrl,
      apiKey: cluster.key.key,
      ...(spec.user === undefined ? {} : { user: spec.user }),
      protocol: spec.protocol,
      WebSocket: this.tappedWebSocket(),
      // Faster than the defaults (0.5 s base, 30 s cap), so a short run sees many cycles.
      backoff: { baseMs: 250, capMs: 3000, resetAfterMs: 10_000 },
    });
    this.sb.on('error', (error) =>
      this.errors.push(`client: ${error.kind} ${error.code ?? ''} ${error.reason}`),
    );
    for (const sub of spec.subscriptions) {
      const channel = this.sb.channel(sub.channel, { presence: sub.presence });
      const app = this.app.get(sub.channel)!;
      channel.on('tick', (data, _meta, publication) =>
        app.offsets.push({
          epoch: channel.epoch,
          offset: publication.offset,
          seq: (data as { seq?: unknown } | undefined)?.seq,
        }),
      );
      channel.on('recovered', (info) => app.recovered.push(info));
      channel.on('unrecovered', (info) => app.unrecovered.push(info));
      channel.on('error', (error) => this.errors.push(`${sub.channel}: ${error.kind} ${error.reason}`));
    }
  }

  get name(): string {
    return this.spec.name;
  }

  get closed(): boolean {
    return this.closedAt !== undefined;
  }

  /** Sockets of this client open now (a correct client has at most one per V4 client). */
  get openTaps(): SocketTap[] {
    return this.taps.filter((tap) => tap.open);
  }

  /** Every channel has its position on an open socket. */
  get live(): boolean {
    if (this.closed) return false;
    return [...this.tracks.values()].every((track) =>
      this.taps.some((tap) => tap.session === track.positionedSession && tap.open),
    );
  }

  close(): void {
    this.closedAt = Date.now();
    this.sb.close();
  }

  describe(): string {
    const tracks = [...this.tracks.values()]
      .map((t) => `${t.channel}@${t.epoch ?? '-'}:${t.offset}${this.live ? '' : ` s${t.positionedSession}`}`)
      .join(' ');
    const last = this.taps[this.taps.length - 1];
    const socket = last
      ? `socket ${last.session} ${last.open ? 'open' : `closed ${last.closeCode ?? '?'}`}`
      : 'no socket';
    return `${this.name} [${tracks}] ${socket}${this.errors.length ? ` errors: ${this.errors.join('; ')}` : ''}`;
  }

  /** A `ws` WebSocket class whose sockets record into this client. */
  private tappedWebSocket(): new (url: string) => WebSocket {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const client = this;
    return class TappedWebSocket extends WebSocket {
      constructor(url: string) {
        super(url);
        client.attach(this, url);
      }
    };
  }

  private attach(socket: WebSocket, url: string): void {
    const tap = new SocketTap(this.taps.length + 1, url, socket);
    this.taps.push(tap);
    socket.on('open', () => {
      tap.opened = true;
      tap.subscribed.add(tap.primary);
      this.changed();
    });
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      // After `close()` the library ignores what still arrives; so do the checks.
      if (this.closed) return;
      if (!isBinary) this.receive(tap, data.toString('utf8'));
      this.changed();
    });
    socket.on('close', (code: number) => {
      tap.closeCode = code;
      this.changed();
    });
    const send = socket.send.bind(socket) as (data: unknown, ...rest: unknown[]) => void;
    (socket as unknown as { send: typeof send }).send = (data, ...rest) => {
      if (typeof data === 'string') this.sent(tap, data);
      send(data, ...rest);
    };
  }

  private sent(tap: SocketTap, text: string): void {
    const frame = parseObject(text);
    const data = frame?.['data'];
    if (frame?.['event'] !== 'system::subscribe' || !data || typeof data !== 'object') return;
    const fields = data as Record<string, unknown>;
    if (typeof fields['channel'] === 'string') tap.subscribes.set(fields['channel'], fields);
  }

  private receive(tap: SocketTap, text: string): void {
    const frame = parseObject(text);
    if (!frame) return;
    const event = frame['event'];
    const data = (frame['data'] && typeof frame['data'] === 'object' ? frame['data'] : {}) as Record<
      string,
      unknown
    >;
    if (event === 'system::subscribe_success' && typeof data['channel'] === 'string') {
      tap.subscribed.add(data['channel']);
      return;
    }
    if (event === 'system::subscribe_error') {
      // `retry: true`: the engine was unreachable; the client subscribes again (docs/protocol.md).
      if (data['retry'] === true) this.retriedSubscribes++;
      else this.errors.push(`subscribe_error on socket ${tap.session}: ${JSON.stringify(data)}`);
      return;
    }
    const stamp = frame['system::channel'];
    const channel =
      tap.protocol === 'v3'
        ? tap.primary
        : event === 'system::position' && typeof data['channel'] === 'string'
          ? data['channel']
          : typeof stamp === 'string'
            ? stamp
            : tap.primary;
    const track = this.tracks.get(channel);
    if (!track) return;
    const now = Date.now();
    if (event === 'system::position') {
      const first = !tap.positioned.has(channel);
      tap.positioned.add(channel);
      let since: Standing | undefined;
      if (first) {
        if (channel === tap.primary) since = tap.since;
        else {
          const sub = tap.subscribes.get(channel);
          if (typeof sub?.['since'] === 'number' && typeof sub['epoch'] === 'string')
            since = { epoch: sub['epoch'], offset: sub['since'] };
        }
      }
      const position: PositionEntry = {
        kind: 'position',
        session: tap.session,
        at: now,
        epoch: String(data['epoch']),
        offset: Number(data['offset']),
        recovered: typeof data['recovered'] === 'boolean' ? data['recovered'] : undefined,
        missed: Number(data['missed']),
        since,
      };
      track.entries.push(position);
      track.epoch = position.epoch;
      track.offset = position.offset;
      track.positionedSession = tap.session;
      return;
    }
    const offset = frame['system::offset'];
    if (typeof offset !== 'number') return;
    if (track.positionedSession !== tap.session || track.epoch === undefined) {
      track.violations.push(`socket ${tap.session}: offset ${offset} before the subscription's position`);
      return;
    }
    track.entries.push({
      kind: 'publication',
      session: tap.session,
      at: now,
      epoch: track.epoch,
      offset,
      seq: data['seq'],
    });
    track.offset = offset;
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Every client of the run, and a way to wait for state their frames change. */
export class Fleet extends Waiters {
  readonly clients: ChaosClient[] = [];

  constructor(private readonly cluster: ChaosCluster) {
    super();
  }

  open(spec: ClientSpec): ChaosClient {
    const client = new ChaosClient(spec, this.cluster, () => this.changed());
    this.clients.push(client);
    return client;
  }

  byName(name: string): ChaosClient | undefined {
    return this.clients.find((client) => client.name === name);
  }

  get active(): ChaosClient[] {
    return this.clients.filter((client) => !client.closed);
  }

  closeAll(): void {
    for (const client of this.active) client.close();
  }
}
