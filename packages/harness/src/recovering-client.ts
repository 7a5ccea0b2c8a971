import WebSocket from 'ws';
import type { BalancedCluster } from './balanced-cluster';
import { Waiters } from './wait';

/**
 * A client that implements the recovery flow of docs/protocol.md ("History and recovery"), the
 * way an SDK would: it opts in on every channel, remembers per channel the epoch of the latest
 * `system::position` and the offset of the latest publication (or the position's offset when no
 * publication came after it), and after a close with 4000–4499 or 1006 reconnects through the
 * balancer with a short backoff and `since`/`epoch`. A V4 secondary subscription is subscribed
 * again, with its own `since`/`epoch`, once the primary's socket is open again.
 *
 * Everything a channel receives is kept in order, for the suites to check against what the
 * publisher was told. The entry types are also what the chaos run records from the wire.
 */

export type Protocol = 'v3' | 'v4';

/** Where a subscription stood when it asked to resume. */
export interface Standing {
  readonly epoch: string;
  readonly offset: number;
}

export interface PositionEntry {
  readonly kind: 'position';
  readonly session: number;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  readonly epoch: string;
  readonly offset: number;
  readonly recovered: boolean | undefined;
  readonly missed: number;
  /** What the subscription asked to resume from (undefined: no `since`, or a position sent mid-subscription). */
  readonly since: Standing | undefined;
}

export interface PublicationEntry {
  readonly kind: 'publication';
  readonly session: number;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  /** The epoch of the latest position before it: a publication frame carries its offset only. */
  readonly epoch: string;
  readonly offset: number;
  /** The publisher's sequence number in the message (`data.seq`), to check content as well as order. */
  readonly seq: unknown;
}

export type Entry = PositionEntry | PublicationEntry;

/** One channel of a client: what it tracks for resuming, and everything it received. */
export class ChannelLog {
  epoch: string | undefined;
  offset = 0;
  /** A position came on the current socket (or subscription): the channel is live. */
  live = false;
  /** What the client sent as `since`/`epoch` for the current subscription. */
  pendingSince: { epoch: string; offset: number } | undefined;
  readonly entries: Entry[] = [];
  /** Frames that break the protocol (a publication before any position…). */
  readonly violations: string[] = [];

  constructor(readonly channel: string) {}

  get resume(): { epoch: string; offset: number } | undefined {
    return this.epoch === undefined ? undefined : { epoch: this.epoch, offset: this.offset };
  }

  get positions(): PositionEntry[] {
    return this.entries.filter((entry): entry is PositionEntry => entry.kind === 'position');
  }

  get publications(): PublicationEntry[] {
    return this.entries.filter((entry): entry is PublicationEntry => entry.kind === 'publication');
  }

  /** The positions, compactly: `epoch:offset recovered(+missed)`, for failure messages. */
  describePositions(): string {
    return this.positions
      .map((p) => {
        const from = p.since ? ` since ${p.since.epoch}:${p.since.offset}` : '';
        return `#${p.session} ${p.epoch}:${p.offset} ${p.recovered ?? '-'}(+${p.missed})${from}`;
      })
      .join(', ');
  }
}

export interface ClientSpec {
  readonly name: string;
  readonly protocol: Protocol;
  /** The channel in the URL (V3, V4 primary). */
  readonly channel: string;
  /** A V4 secondary subscription (`system::subscribe` with `recover: true`). */
  readonly secondary?: string;
  /**
   * In the primary channel's presence (`presence=1`) under this uuid and user, on every socket:
   * a resumed connection is the same member again.
   */
  readonly presence?: { readonly uuid: string; readonly user: string };
}

export class RecoveringFleet extends Waiters {
  readonly clients: RecoveringClient[] = [];

  constructor(readonly cluster: BalancedCluster) {
    super(() => this.describe());
  }

  add(spec: ClientSpec): RecoveringClient {
    const client = new RecoveringClient(spec, this);
    this.clients.push(client);
    client.connect();
    return client;
  }

  /** Every client has a position on every channel on its current socket. */
  get allLive(): boolean {
    return this.clients.every((client) => client.live);
  }

  stop(): void {
    for (const client of this.clients) client.stop();
  }

  describe(): string {
    const notLive = this.clients
      .flatMap((client) =>
        [...client.logs.values()]
          .filter((log) => !log.live)
          .map((log) => `${client.spec.name}/${log.channel}${client.open ? '' : ' (socket closed)'}`),
      )
      .join(', ');
    return `not live: ${notLive || 'none'}`;
  }
}

/** Codes after which a client reconnects (docs/protocol.md, close codes); others are final. */
const reconnectable = (code: number): boolean => (code >= 4000 && code <= 4499) || code === 1006;

export class RecoveringClient {
  readonly logs = new Map<string, ChannelLog>();
  /** Close codes of the sockets that opened, in order. */
  readonly closes: number[] = [];
  /** Close codes of attempts that never opened (refused upgrade, no server at the balancer). */
  readonly failedAttempts: number[] = [];
  /** Closes after which no SDK would reconnect: a correct cluster gives none. */
  readonly finalCloses: number[] = [];
  /** `system::subscribe_error` answers to the secondary subscription (each retried). */
  readonly subscribeErrors: string[] = [];
  private sessions = 0;
  private socket: WebSocket | undefined;
  private retry: NodeJS.Timeout | undefined;
  private resubscribe: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;
  private offline = false;

  constructor(
    readonly spec: ClientSpec,
    private readonly fleet: RecoveringFleet,
  ) {
    this.logs.set(spec.channel, new ChannelLog(spec.channel));
    if (spec.secondary !== undefined) this.logs.set(spec.secondary, new ChannelLog(spec.secondary));
  }

  get open(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  get live(): boolean {
    return this.open && [...this.logs.values()].every((log) => log.live);
  }

  log(channel: string): ChannelLog {
    const log = this.logs.get(channel);
    if (!log) throw new Error(`${this.spec.name} is not on ${channel}`);
    return log;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    clearTimeout(this.resubscribe);
    this.socket?.terminate();
  }

  /** Its network goes away (the socket is cut, as a client sees 1006) until `goOnline`. */
  goOffline(): void {
    this.offline = true;
    clearTimeout(this.retry);
    this.socket?.terminate();
  }

  /** The network is back: it reconnects (resuming) as after any abnormal close. */
  goOnline(): void {
    this.offline = false;
    if (!this.open) this.connect();
  }

  connect(): void {
    if (this.offline) return;
    const { cluster } = this.fleet;
    const session = ++this.sessions;
    const primary = this.log(this.spec.channel);
    const query: Record<string, string> = { api_key: cluster.key.key, recover: '1' };
    if (this.spec.presence) {
      query['presence'] = '1';
      query['uuid'] = this.spec.presence.uuid;
      query['user'] = this.spec.presence.user;
    }
    primary.pendingSince = primary.resume;
    if (primary.pendingSince) {
      query['since'] = String(primary.pendingSince.offset);
      query['epoch'] = primary.pendingSince.epoch;
    }
    const socket = new WebSocket(cluster.wsUrl(`/${this.spec.protocol}/${this.spec.channel}`, query));
    this.socket = socket;
    let opened = false;
    socket.on('open', () => {
      opened = true;
      if (this.spec.secondary !== undefined) this.subscribeSecondary(socket);
      this.fleet.changed();
    });
    socket.on('message', (data: Buffer) => {
      this.receive(session, data.toString('utf8'), socket);
      this.fleet.changed();
    });
    socket.on('error', () => undefined); // a refused upgrade or reset: the close below reconnects
    socket.on('close', (code) => {
      (opened ? this.closes : this.failedAttempts).push(code);
      for (const log of this.logs.values()) log.live = false;
      this.fleet.changed();
      if (this.stopped) return;
      if (reconnectable(code)) this.retry = setTimeout(() => this.connect(), this.backoff());
      else this.finalCloses.push(code);
    });
  }

  /** The SDKs' reconnect delay: short, growing while attempts keep failing, with jitter. */
  private backoff(): number {
    return Math.min(1000, 50 * 2 ** this.failures++) + Math.random() * 50;
  }

  private subscribeSecondary(socket: WebSocket): void {
    const log = this.log(this.spec.secondary!);
    log.pendingSince = log.resume;
    const data: Record<string, unknown> = { channel: log.channel, recover: true };
    if (log.pendingSince) {
      data['since'] = log.pendingSince.offset;
      data['epoch'] = log.pendingSince.epoch;
    }
    socket.send(JSON.stringify({ event: 'system::subscribe', data }));
  }

  private receive(session: number, text: string, socket: WebSocket): void {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return; // not a frame of the stream (nothing else is published here)
    }
    const stamp = frame['system::channel'];
    const channel = typeof stamp === 'string' ? stamp : this.spec.channel;
    const log = this.logs.get(channel);
    const data = frame['data'] as Record<string, unknown> | undefined;
    if (frame['event'] === 'system::subscribe_error') {
      // Retryable (history unavailable while the engine is unreachable): subscribe again later.
      this.subscribeErrors.push(JSON.stringify(data));
      clearTimeout(this.resubscribe);
      this.resubscribe = setTimeout(() => {
        if (socket.readyState === WebSocket.OPEN) this.subscribeSecondary(socket);
      }, this.backoff());
      return;
    }
    if (!log) return;
    if (frame['event'] === 'system::position' && data) {
      const position: PositionEntry = {
        kind: 'position',
        session,
        at: Date.now(),
        epoch: String(data['epoch']),
        offset: Number(data['offset']),
        recovered: typeof data['recovered'] === 'boolean' ? data['recovered'] : undefined,
        missed: Number(data['missed']),
        since: log.live ? undefined : log.pendingSince,
      };
      log.entries.push(position);
      log.epoch = position.epoch;
      log.offset = position.offset;
      log.live = true;
      this.failures = 0;
      return;
    }
    const offset = frame['system::offset'];
    if (typeof offset !== 'number') return;
    if (!log.live || log.epoch === undefined) {
      log.violations.push(`session ${session}: offset ${offset} before any system::position: ${text}`);
      return;
    }
    log.entries.push({
      kind: 'publication',
      session,
      at: Date.now(),
      epoch: log.epoch,
      offset,
      seq: data?.['seq'],
    });
    log.offset = offset;
  }
}
