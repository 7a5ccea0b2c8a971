import { Emitter } from './emitter';
import type { Handler } from './emitter';
import { QueueFullError, SwitchboardError } from './errors';
import { host, toBytes } from './platform';

/** A presence member: `user` is omitted when the connection presented none. */
export interface Member {
  uuid: string;
  user?: unknown;
}

/** A message published to the channel, as the application sees it. */
export interface Publication {
  /** The frame's `event`; undefined for a message that is not an `{event, data, meta}` object. */
  event: string | undefined;
  data: unknown;
  meta: unknown;
  /** The message's position in the channel (1, 2, 3…), when recovery is on. */
  offset: number | undefined;
  /** The message as published: its JSON text, or the exact text of a non-JSON message. */
  text: string;
}

export interface ChannelOptions {
  /** Join the channel's presence list (always on for `presence-…` channels). */
  presence?: boolean;
  /** This subscription's user (V4); defaults to the client's `user`. */
  user?: string;
}

export type ChannelState = 'pending' | 'subscribed' | 'failed' | 'left';

/** What a channel needs from the socket that carries it. */
export interface Carrier {
  readonly protocol: 3 | 4;
  /**
   * Writes the frame, or returns false when it cannot now: no open socket, or the socket's pace
   * (`maxMessagesPerSecond`) is used up; the carrier calls `flush()` once it can again.
   */
  send(channel: Channel, frame: Outgoing): boolean;
  /** How many messages may wait to be sent per channel (`maxQueued`). */
  readonly queueLimit: number;
  /** Numbers written messages across the socket's channels (refusals that name no channel). */
  nextSequence(): number;
  /** A refusal for `channel` that no message of it awaits: the socket's oldest unconfirmed message takes it. */
  refuseOldest(error: SwitchboardError): void;
  requestMembers(channel: Channel): Promise<Member[]>;
  isPrimary(channel: Channel): boolean;
  /**
   * The socket always receives this client's own messages: they confirm its publishes, and
   * recovery needs every offset. When the application did not ask for them (`notifySelf`), the
   * channel drops them after use.
   */
  readonly dropsEchoes: boolean;
  leave(channel: Channel): void;
}

/** A JSON frame, raw text, or binary. */
export type Outgoing = Record<string, unknown> | string | ArrayBuffer | ArrayBufferView;

interface Queued {
  frame: Outgoing;
  /** The server's relay confirms it (`system::to` direct messages are not relayed back). */
  confirmed: boolean;
  resolve: () => void;
  reject: (error: SwitchboardError) => void;
}

/** A message written to the socket, as it will come back to this client. */
interface Echo {
  text: string | Uint8Array;
  /** The publish waiting for the server's confirmation, until it comes, is refused or times out. */
  pending?: (Queued & { sequence: number; timer: unknown }) | undefined;
}

/** How long a written message waits for the server to relay it back (the protocol's 10 s). */
const CONFIRM_TIMEOUT_MS = 10_000;
/** Written messages remembered per channel until they come back. */
const MAX_ECHOES = 1024;

const SYSTEM_KEYS = ['system::channel', 'system::offset'];

/** A member's identity, as V4 presence deduplicates: `user` (its JSON text unless a string), else `uuid`. */
export function identity(member: Member): string {
  if (member.user === undefined || member.user === null || member.user === '') return member.uuid;
  return typeof member.user === 'string' ? member.user : JSON.stringify(member.user);
}

const bytesOf = (base64: unknown): Uint8Array => toBytes(typeof base64 === 'string' ? base64 : '');

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * One channel of a client. Created by `Switchboard.channel()`; it lives until `leave()` or
 * `close()`, across reconnects: publications resume where they stopped (see docs/client.md).
 */
export class Channel extends Emitter {
  /** The presence list kept from the server's member events (presence-enabled channels). */
  members: Member[] = [];
  state: ChannelState = 'pending';
  /** The channel's history epoch and the offset of the last publication delivered (recovery). */
  epoch: string | undefined;
  offset: number | undefined;
  /**
   * The subscription's first `system::position` is still to come: `since` when it asked to
   * resume, `null` when it did not. Undefined once the position arrived.
   */
  private resuming: number | null | undefined;
  readonly presence: boolean;
  /**
   * V4 member events that came before this subscription's `system::member_list`, in order. They
   * travel apart from the list (on the server, one comes from Redis' pub/sub, the other from the
   * join's reply), so one may overtake the other; applied after the list, they leave the members
   * the server has, whether or not the list already holds their change.
   */
  private held: Array<{ joined: boolean; member: unknown }> | undefined;
  /** Why the channel failed or was left. */
  error: SwitchboardError | undefined;
  private queue: Queued[] = [];
  /** What this client sent and has not seen come back yet, oldest first (see `Carrier.dropsEchoes`). */
  private echoes: Echo[] = [];
  private waiters: Array<{ resolve: () => void; reject: (error: SwitchboardError) => void }> = [];
  /** Every frame of the channel as received (the PieSocket facade's listeners). */
  tap:
    | ((
        event: string | undefined,
        frame: Record<string, unknown> | undefined,
        text: string | Uint8Array,
      ) => void)
    | undefined;

  /** @internal The subscription went up or down (the PieSocket facade's open and close). */
  tapState: ((up: boolean) => void) | undefined;

  /** @internal */
  constructor(
    readonly name: string,
    readonly options: ChannelOptions,
    /** @internal */
    public carrier: Carrier,
  ) {
    super();
    this.presence = options.presence === true || name.startsWith('presence-');
    if (this.presence) this.held = [];
  }

  /** Every publication that has an event: `(event, data, meta, publication)`. */
  override on(
    event: '*',
    handler: (event: string, data: unknown, meta: unknown, publication: Publication) => void,
  ): () => void;
  /** The subscription is active (first time and after every reconnect). */
  override on(event: 'subscribed', handler: () => void): () => void;
  override on(event: 'error', handler: (error: SwitchboardError) => void): () => void;
  /** The kept member list was replaced by the server's (on join and on `fetchMembers()`). */
  override on(event: 'members', handler: (members: readonly Member[]) => void): () => void;
  override on(
    event: 'member_joined' | 'member_left',
    handler: (member: Member, members: readonly Member[]) => void,
  ): () => void;
  /** The channel resumed: `missed` publications follow, in order, before live ones. */
  override on(
    event: 'recovered',
    handler: (info: { missed: number; epoch: string; offset: number }) => void,
  ): () => void;
  /** The channel could not resume (history expired or lost): reload the state from your backend. */
  override on(event: 'unrecovered', handler: (info: { epoch: string; offset: number }) => void): () => void;
  override on(event: 'binary', handler: (bytes: Uint8Array) => void): () => void;
  /** Messages that are not `{event, data, meta}` objects: their text. */
  override on(event: 'text', handler: (text: string, publication: Publication) => void): () => void;
  /** Publications with this event name: `(data, meta, publication)`. */
  override on<D = unknown, M = unknown>(
    event: string,
    handler: (data: D, meta: M, publication: Publication) => void,
  ): () => void;
  override on(event: string, handler: Handler): () => void {
    return super.on(event, handler);
  }

  /** Whether this channel carries the socket's path (V4 primary): binary frames belong to it. */
  get isPrimary(): boolean {
    return this.carrier.isPrimary(this);
  }

  /**
   * Publishes `{event, data, meta}` to the channel's other connections (and to this one when
   * `notifySelf` is on). While the channel is not subscribed the message waits, in order, at
   * most `maxQueued` of them (beyond: a `QueueFullError`), and goes out at the client's pace.
   * The promise resolves when the server relayed the message (it comes back to this client),
   * and rejects when the server refused it, the socket closed first, or 10 s passed.
   */
  publish(event: string, data?: unknown, meta?: unknown): Promise<void> {
    return this.enqueue(meta === undefined ? { event, data } : { event, data, meta });
  }

  /** A direct message (`system::to`): only the channel's connections whose `user` is `user` get it. */
  sendTo(user: string, event: string, data?: unknown, meta?: unknown): Promise<void> {
    const frame: Record<string, unknown> = meta === undefined ? { event, data } : { event, data, meta };
    frame['system::to'] = user;
    return this.enqueue(frame, false);
  }

  /**
   * A binary frame. On V4 the server attributes binary frames to the socket's primary channel,
   * so only the primary (`isPrimary`) may send them.
   */
  sendBinary(bytes: ArrayBuffer | ArrayBufferView): Promise<void> {
    if (this.carrier.protocol === 4 && !this.isPrimary)
      return Promise.reject(
        new SwitchboardError('state', 'Binary frames belong to the primary channel', undefined, this.name),
      );
    return this.enqueue(bytes);
  }

  /** The channel's presence members, fresh from the server (V4), or the kept list (V3). */
  async fetchMembers(): Promise<Member[]> {
    await this.ready();
    if (this.carrier.protocol === 3) return [...this.members];
    return this.carrier.requestMembers(this);
  }

  /** Resolves once the channel is subscribed (at once when it is). */
  ready(): Promise<void> {
    if (this.state === 'subscribed') return Promise.resolve();
    if (this.error) return Promise.reject(this.error);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Leaves the channel: unsubscribes it (or moves the socket to another channel) and drops its handlers. */
  leave(): void {
    if (this.state === 'left') return;
    this.carrier.leave(this);
    this.finish('left', new SwitchboardError('state', 'Channel was left', undefined, this.name));
  }

  /** @internal Raw text, sent as is (the PieSocket facade's `send`). */
  sendText(text: string): Promise<void> {
    return this.enqueue(text);
  }

  private enqueue(frame: Outgoing, confirmed = true): Promise<void> {
    if (this.error)
      return Promise.reject(new SwitchboardError('state', `Channel is ${this.state}`, undefined, this.name));
    if (this.queue.length >= this.carrier.queueLimit)
      return Promise.reject(new QueueFullError(this.carrier.queueLimit, this.name));
    return new Promise((resolve, reject) => {
      this.queue.push({ frame, confirmed, resolve, reject });
      if (this.queue.length === 1) this.flush();
    });
  }

  /** @internal Writes waiting messages, in order, while the channel is subscribed and the carrier takes them. */
  flush(): void {
    while (this.queue.length > 0 && this.state === 'subscribed') {
      const next = this.queue[0]!;
      if (!this.carrier.send(this, next.frame)) return;
      this.queue.shift();
      this.sent(next);
    }
  }

  /** Remembers a written message until it comes back (the confirmation) or is given up. */
  private sent(entry: Queued): void {
    const { frame } = entry;
    const echoed = !(typeof frame === 'object' && 'system::to' in frame);
    if (!echoed || !entry.confirmed) entry.resolve();
    if (!echoed) return;
    const text =
      typeof frame === 'string'
        ? frame
        : frame instanceof ArrayBuffer || ArrayBuffer.isView(frame)
          ? new Uint8Array(
              ArrayBuffer.isView(frame)
                ? frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.byteLength)
                : frame.slice(0),
            )
          : JSON.stringify(frame);
    const echo: Echo = { text };
    if (entry.confirmed) {
      const timer = host.setTimeout(
        () =>
          this.settle(
            echo,
            new SwitchboardError(
              'timeout',
              'The server did not confirm the message within 10 s',
              undefined,
              this.name,
            ),
          ),
        CONFIRM_TIMEOUT_MS,
      );
      echo.pending = { ...entry, sequence: this.carrier.nextSequence(), timer };
    }
    this.echoes.push(echo);
    // Bounded: a message the server refused never comes back. Unconfirmed messages are at most
    // what the pace lets out in the confirmation timeout (500 at the default pace); past the
    // bound the oldest is given up, rejected if it still waits.
    while (this.echoes.length > MAX_ECHOES) {
      const oldest = this.echoes[0]!;
      const error = oldest.pending
        ? new SwitchboardError(
            'timeout',
            `More than ${MAX_ECHOES} messages await confirmation`,
            undefined,
            this.name,
          )
        : undefined;
      this.settle(oldest, error, true);
    }
  }

  /**
   * Ends a written message's wait: confirmed (no error) or rejected. `forget` also drops the
   * echo (its message will not be recognized when it comes back).
   */
  private settle(echo: Echo, error?: SwitchboardError, forget = error === undefined): void {
    const pending = echo.pending;
    echo.pending = undefined;
    if (pending) {
      host.clearTimeout(pending.timer);
      if (error) pending.reject(error);
      else pending.resolve();
    }
    if (forget) {
      const index = this.echoes.indexOf(echo);
      if (index >= 0) this.echoes.splice(index, 1);
    }
  }

  /** @internal The oldest message still waiting for its confirmation (its sequence number). */
  oldestUnconfirmed(): number | undefined {
    return this.echoes.find((echo) => echo.pending)?.pending?.sequence;
  }

  /** @internal The server refused a message of this channel: the oldest unconfirmed one. */
  refuse(error: SwitchboardError): boolean {
    const echo = this.echoes.find((candidate) => candidate.pending);
    if (!echo) return false;
    this.settle(echo, error, true);
    return true;
  }

  // ---- called by the socket that carries the channel ------------------------------------

  /** @internal */
  subscribed(): void {
    this.state = 'subscribed';
    this.flush();
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
    this.emit('subscribed');
    this.tapState?.(true);
  }

  /** @internal */
  report(error: SwitchboardError): void {
    this.emit('error', error);
  }

  /**
   * @internal The socket is gone; the channel waits for the next one. Messages written and not
   * confirmed are rejected with `error`: whether they reached the channel is unknown, and
   * sending them again could deliver them twice. Their echoes stay known, so a copy that comes
   * back in a recovery replay is still dropped.
   */
  down(error?: SwitchboardError): void {
    for (const echo of this.echoes)
      if (echo.pending)
        this.settle(
          echo,
          error ?? new SwitchboardError('unconfirmed', 'The connection closed', undefined, this.name),
          false,
        );
    if (this.presence) this.held = [];
    if (this.state !== 'subscribed') return;
    this.state = 'pending';
    this.tapState?.(false);
  }

  /** @internal */
  finish(state: 'failed' | 'left', error: SwitchboardError): void {
    if (this.state === 'left') return;
    if (this.state === 'subscribed') this.tapState?.(false);
    this.state = state;
    this.error = error;
    for (const entry of this.queue.splice(0)) entry.reject(error);
    for (const echo of this.echoes.splice(0)) this.settle(echo, error);
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    if (state === 'failed') this.emit('error', error);
    else this.clear();
  }

  /** @internal The `since`/`epoch` to resume from, remembered as what this subscription asked. */
  resumeFrom(): { since: number; epoch: string } | undefined {
    const from = this.epoch !== undefined && this.offset !== undefined ? this.offset : undefined;
    this.resuming = from ?? null;
    return from === undefined ? undefined : { since: from, epoch: this.epoch! };
  }

  /** @internal A frame routed to this channel (`frame` is undefined when the text is not a JSON object). */
  receive(frame: Record<string, unknown> | undefined, raw: string): void {
    let event = frame && typeof frame['event'] === 'string' ? frame['event'] : undefined;
    const offset = frame?.['system::offset'];
    if (typeof offset === 'number' && !this.accept(offset)) return;
    let text = raw;
    if (frame && (typeof offset === 'number' || frame['system::channel'] !== undefined)) {
      for (const key of SYSTEM_KEYS) delete frame[key];
      text = JSON.stringify(frame);
    }
    const data = frame?.['data'];
    if (event === 'system::message' && typeof data === 'string') {
      frame = event = undefined;
      text = data;
    }
    // Own messages come back as publications (text) or, on V4, as system::binary.
    if (
      this.echoes.length > 0 &&
      (event === 'system::binary' ? this.isEcho(bytesOf(data)) : this.isEcho(text)) &&
      this.carrier.dropsEchoes
    )
      return;
    this.dispatch(event, frame, data, text, offset);
    this.tap?.(event, frame, text);
  }

  private dispatch(
    event: string | undefined,
    frame: Record<string, unknown> | undefined,
    data: unknown,
    text: string,
    offset: unknown,
  ): void {
    const body = isRecord(data) ? data : {};
    switch (event) {
      case 'system::position':
        return this.position(body);
      case 'system::member_list':
      case 'system:member_list': {
        this.members = Array.isArray(body['members']) ? (body['members'] as Member[]) : [];
        this.emit('members', this.members);
        const held = this.held ?? [];
        this.held = undefined;
        for (const { joined, member } of held) this.delta(joined, member);
        return;
      }
      case 'system::member_joined':
      case 'system::member_left': {
        const joined = event === 'system::member_joined';
        if (this.held) this.held.push({ joined, member: body['member'] });
        else this.delta(joined, body['member']);
        return;
      }
      case 'system:member_joined':
      case 'system:member_left':
        return this.roster(event === 'system:member_joined', body);
      case 'system::binary':
        this.emit('binary', bytesOf(data));
        return;
      case 'system:error':
      case 'system::error':
        // V3 frame errors have one colon; on V4 a single-colon event is a relayed client message.
        if (event === 'system:error' && this.carrier.protocol === 4) break;
        {
          // The server names no message: the refusal is the oldest unconfirmed one's (refusals
          // are answered at once, in order), this channel's, else the socket's.
          const error = new SwitchboardError('frame', String(body['error']), undefined, this.name);
          if (!this.refuse(error)) this.carrier.refuseOldest(error);
          this.emit('error', error);
        }
        return;
    }
    const publication: Publication = {
      event,
      data: frame ? data : text,
      meta: frame?.['meta'],
      offset: typeof offset === 'number' ? offset : undefined,
      text,
    };
    if (!frame || event === undefined) {
      this.emit('text', text, publication);
      return;
    }
    this.emit(event, data, publication.meta, publication);
    this.emit('*', event, data, publication.meta, publication);
  }

  /** @internal Raw binary frames (V3). */
  binary(bytes: Uint8Array): void {
    if (this.echoes.length > 0 && this.isEcho(bytes) && this.carrier.dropsEchoes) return;
    this.tap?.(undefined, undefined, bytes);
    this.emit('binary', bytes);
  }

  /**
   * Publications in offset order, each once: an offset already delivered is a duplicate (a
   * replay overlapping live delivery). A jump is not a loss: the server promises no gap and says
   * so with a `system::position` when it cannot keep that promise.
   */
  private accept(offset: number): boolean {
    if (this.offset !== undefined && offset <= this.offset) return false;
    this.offset = offset;
    return true;
  }

  /**
   * Whether `text` is one of this client's own messages coming back: its publish is confirmed,
   * and it is forgotten.
   */
  private isEcho(text: string | Uint8Array): boolean {
    const echo = this.echoes.find(({ text: sent }) =>
      typeof sent === 'string' || typeof text === 'string'
        ? sent === text
        : sent.length === text.length && sent.every((byte, i) => byte === text[i]),
    );
    if (echo) this.settle(echo);
    return echo !== undefined;
  }

  /**
   * The subscription's first position says whether the resume closed the gap (`recovered`:
   * the missed publications follow); later ones come when the server could not fill a gap, or
   * the topic's epoch changed, and say where live delivery continues.
   */
  private position(body: Record<string, unknown>): void {
    const { epoch, offset, recovered, missed } = body;
    if (typeof epoch !== 'string' || typeof offset !== 'number') return;
    const since = this.resuming;
    this.resuming = undefined;
    this.epoch = epoch;
    if (recovered === true && typeof since === 'number') {
      this.offset = since;
      this.emit('recovered', { missed: typeof missed === 'number' ? missed : offset - since, epoch, offset });
      return;
    }
    this.offset = offset;
    if (recovered === false) this.emit('unrecovered', { epoch, offset });
  }

  private delta(joined: boolean, member: unknown): void {
    if (!isRecord(member)) return;
    const m = member as unknown as Member;
    const id = identity(m);
    const others = this.members.filter((candidate) => identity(candidate) !== id);
    this.members = joined ? [m, ...others] : others;
    this.emit(joined ? 'member_joined' : 'member_left', m, this.members);
  }

  private roster(joined: boolean, body: Record<string, unknown>): void {
    this.members = Array.isArray(body['members']) ? (body['members'] as Member[]) : this.members;
    if (isRecord(body['member']))
      this.emit(joined ? 'member_joined' : 'member_left', body['member'] as unknown as Member, this.members);
  }
}
