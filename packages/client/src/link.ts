import { reconnectDelay } from './backoff';
import type { BackoffOptions } from './backoff';
import type { Carrier, Channel, Member, Outgoing } from './channel';
import { isServerReconnect, isTerminalClose, SwitchboardError } from './errors';
import { host, OPEN } from './platform';
import type { Timer, WebSocketConstructor, WebSocketLike } from './platform';

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'disconnected' | 'failed' | 'closed';

/** @internal What every socket of one client shares. */
export interface LinkSettings {
  readonly protocol: 3 | 4;
  readonly urls: readonly string[];
  readonly apiKey: string;
  readonly user: string | undefined;
  readonly uuid: string;
  readonly notifySelf: boolean;
  readonly recover: boolean;
  readonly maxQueued: number;
  readonly maxMessagesPerSecond: number;
  readonly backoff: Required<BackoffOptions>;
  readonly WebSocket: WebSocketConstructor;
  readonly token: (channel: string) => Promise<string | undefined>;
  readonly onState: () => void;
  readonly onError: (error: SwitchboardError) => void;
  readonly onLeave: (channel: Channel) => void;
}

/** The protocol's reply timeout (the PieSocket SDKs' 10 seconds), also the connect timeout. */
const REPLY_TIMEOUT_MS = 10_000;

/** After the `online` event, the reconnect waits a random time under this. */
const ONLINE_WINDOW_MS = 1000;

/** Control replies name their channel in `data.channel` and are never stamped. */
const ROUTED_BY_DATA = new Set([
  'system::subscribe_success',
  'system::subscribe_error',
  'system::unsubscribe_success',
  'system::unsubscribe_error',
  'system::member_list_error',
  'system::member_list',
  'system::member_joined',
  'system::member_left',
  'system::position',
  'system::kicked',
]);

/**
 * One WebSocket and the channels it carries, reconnecting with backoff until it is told to
 * stop. V4: the first channel is the primary (the URL's path), the others are subscribed with
 * control frames. V3: exactly one channel.
 */
export class Link implements Carrier {
  state: ConnectionState = 'idle';
  readonly channels = new Map<string, Channel>();
  private primary: Channel | undefined;
  private socket: WebSocketLike | undefined;
  /** Consecutive reconnects without a socket that stayed up `resetAfterMs`. */
  private attempt = 0;
  private urlIndex = 0;
  /** Counts sockets, so late callbacks of an older one are ignored. */
  private generation = 0;
  private timer: Timer | undefined;
  private stableTimer: Timer | undefined;
  /** The text of an `{"error": …}` frame: it precedes a terminal close and names its reason. */
  private errorText: string | undefined;
  /** Consecutive retryable refusals per secondary channel (reset when it is subscribed). */
  private readonly resubscribes = new Map<string, number>();
  /** When the current socket's latest frames were written, oldest first (the pace's window). */
  private written: number[] = [];
  private paceTimer: Timer | undefined;
  private sequence = 0;
  private memberRequests = new Map<
    string,
    Array<{ resolve: (m: Member[]) => void; reject: (e: Error) => void }>
  >();

  constructor(private readonly settings: LinkSettings) {}

  get protocol(): 3 | 4 {
    return this.settings.protocol;
  }

  /**
   * The socket always asks for its own messages (`notify_self`), even when the application
   * does not want them: a message coming back is the server's confirmation that it relayed it
   * (the protocol has no other acknowledgement of client messages), and with recovery every
   * publication of the channel then reaches the client with its offset, so its resume point
   * never lags behind its own messages. The channel drops them instead of the server.
   */
  get dropsEchoes(): boolean {
    return !this.settings.notifySelf;
  }

  get queueLimit(): number {
    return this.settings.maxQueued;
  }

  nextSequence(): number {
    return ++this.sequence;
  }

  refuseOldest(error: SwitchboardError): void {
    let oldest: Channel | undefined;
    let first = Infinity;
    for (const channel of this.channels.values()) {
      const sequence = channel.oldestUnconfirmed();
      if (sequence !== undefined && sequence < first) [oldest, first] = [channel, sequence];
    }
    oldest?.refuse(error);
  }

  isPrimary(channel: Channel): boolean {
    return channel === this.primary;
  }

  add(channel: Channel): void {
    this.channels.set(channel.name, channel);
    if (!this.primary) {
      this.primary = channel;
      this.connectNow();
    } else if (this.state === 'connected') void this.subscribe(channel, this.generation);
  }

  leave(channel: Channel): void {
    if (this.channels.get(channel.name) !== channel) return;
    this.channels.delete(channel.name);
    this.settings.onLeave(channel);
    // A failed or closed socket is not reopened for the channels that remain.
    if (this.state === 'failed' || this.state === 'closed') return;
    if (channel !== this.primary) {
      if (this.state === 'connected')
        this.write({ event: 'system::unsubscribe', data: { channel: channel.name } });
      return;
    }
    // The primary lives as long as its socket: move the socket to another channel; the others
    // resubscribe on it and resume from their offsets.
    this.primary = this.channels.values().next().value;
    this.drop();
    if (this.primary) this.connectNow();
    else this.setState('idle');
  }

  close(): void {
    this.drop();
    this.setState('closed');
  }

  /**
   * The browser came back online: a waiting reconnect happens soon, after a random time under
   * a second (or `capMs`) instead of the rest of a longer backoff. Every client of a network
   * that comes back gets the event at the same moment; they should not arrive together.
   */
  online(): void {
    if (this.state !== 'disconnected') return;
    host.clearTimeout(this.timer);
    const generation = this.generation;
    this.timer = host.setTimeout(
      () => generation === this.generation && this.connectNow(),
      Math.random() * Math.min(ONLINE_WINDOW_MS, this.settings.backoff.capMs),
    );
  }

  send(channel: Channel, frame: Outgoing): boolean {
    if (!this.socket || this.socket.readyState !== OPEN || this.state !== 'connected') return false;
    if (!this.pace()) return false;
    if (typeof frame === 'string' || frame instanceof ArrayBuffer || ArrayBuffer.isView(frame))
      this.socket.send(frame);
    else
      this.socket.send(
        JSON.stringify(
          channel === this.primary || this.protocol === 3
            ? frame
            : { ...frame, 'system::channel': channel.name },
        ),
      );
    return true;
  }

  requestMembers(channel: Channel): Promise<Member[]> {
    return new Promise((resolve, reject) => {
      const list = this.memberRequests.get(channel.name) ?? [];
      this.memberRequests.set(channel.name, list);
      const entry = {
        resolve: (members: Member[]) => {
          host.clearTimeout(timer);
          resolve(members);
        },
        reject: (error: Error) => {
          host.clearTimeout(timer);
          reject(error);
        },
      };
      const timer = host.setTimeout(() => {
        list.splice(list.indexOf(entry), 1);
        reject(new SwitchboardError('timeout', 'No member list within 10 s', undefined, channel.name));
      }, REPLY_TIMEOUT_MS);
      list.push(entry);
      this.write({ event: 'system::get_members', data: { channel: channel.name } });
    });
  }

  // ---- the socket -----------------------------------------------------------------------

  private setState(state: ConnectionState): void {
    if (this.state === state) return;
    this.state = state;
    this.settings.onState();
  }

  /**
   * Closes the current socket without reconnecting; its channels wait for the next one (their
   * unconfirmed messages are rejected with `error`).
   */
  private drop(error?: SwitchboardError): void {
    this.generation++;
    host.clearTimeout(this.timer);
    host.clearTimeout(this.stableTimer);
    host.clearTimeout(this.paceTimer);
    this.paceTimer = undefined;
    this.written = [];
    const socket = this.socket;
    this.socket = undefined;
    if (socket) {
      socket.onopen = socket.onmessage = socket.onclose = null;
      // Kept: `ws` reports closing a socket that is still connecting as an error event, and an
      // error event nobody listens to would crash Node.
      socket.onerror = () => undefined;
      try {
        socket.close(1000);
      } catch {
        // A socket still connecting may refuse to close on some hosts; it is abandoned anyway.
      }
    }
    for (const channel of this.channels.values()) channel.down(error);
    this.failMemberRequests(new SwitchboardError('state', 'The connection closed'));
  }

  private connectNow(): void {
    host.clearTimeout(this.timer);
    void this.open(++this.generation);
  }

  private query(channel: Channel, jwt: string | undefined): string {
    const { settings } = this;
    const params: Array<[string, string | undefined]> = [
      ['api_key', settings.apiKey],
      ['uuid', settings.uuid],
      ['user', channel.options.user ?? settings.user],
      ['presence', channel.presence ? '1' : undefined],
      ['notify_self', '1'],
      ['jwt', jwt],
      ['source', 'switchboard-js'],
    ];
    if (settings.recover) {
      params.push(['recover', '1']);
      const from = channel.resumeFrom();
      if (from) params.push(['since', String(from.since)], ['epoch', from.epoch]);
    }
    return params
      .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')
      .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
      .join('&');
  }

  private async open(generation: number): Promise<void> {
    const primary = this.primary;
    if (!primary) return;
    this.setState('connecting');
    let jwt: string | undefined;
    try {
      jwt = await this.settings.token(primary.name);
    } catch (error) {
      if (generation !== this.generation) return;
      primary.report(tokenError(primary.name, error));
      return this.retry(1006);
    }
    if (generation !== this.generation || this.primary !== primary) return;
    const base = this.settings.urls[this.urlIndex % this.settings.urls.length]!.replace(/\/+$/, '');
    const url = `${base}/v${this.protocol}/${encodeURIComponent(primary.name)}?${this.query(primary, jwt)}`;
    let socket: WebSocketLike;
    try {
      socket = new this.settings.WebSocket(url) as WebSocketLike;
    } catch (error) {
      // The host refuses the URL itself (a malformed `url`): retrying cannot help.
      return this.fail(
        new SwitchboardError('closed', error instanceof Error ? error.message : String(error)),
      );
    }
    this.socket = socket;
    this.errorText = undefined;
    socket.binaryType = 'arraybuffer';
    // A socket that neither opens nor fails (a black-holed host) is given up like a dropped one.
    this.timer = host.setTimeout(() => {
      if (generation === this.generation && this.state === 'connecting') this.closed(generation, 1006, '');
    }, REPLY_TIMEOUT_MS);
    socket.onopen = () => generation === this.generation && this.opened(generation);
    socket.onmessage = (event) => generation === this.generation && this.message(event.data);
    socket.onclose = (event) => this.closed(generation, event.code, event.reason);
    socket.onerror = () => undefined;
  }

  private opened(generation: number): void {
    host.clearTimeout(this.timer);
    this.setState('connected');
    this.stableTimer = host.setTimeout(() => {
      this.attempt = 0;
    }, this.settings.backoff.resetAfterMs);
    this.primary?.subscribed();
    for (const channel of this.channels.values())
      if (channel !== this.primary && channel.state === 'pending') void this.subscribe(channel, generation);
  }

  private async subscribe(channel: Channel, generation: number): Promise<void> {
    let jwt: string | undefined;
    try {
      jwt = await this.settings.token(channel.name);
    } catch (error) {
      channel.report(tokenError(channel.name, error));
      return;
    }
    if (generation !== this.generation || this.channels.get(channel.name) !== channel) return;
    const data: Record<string, unknown> = {
      channel: channel.name,
      presence: channel.presence,
      uuid: this.settings.uuid,
    };
    const user = channel.options.user ?? this.settings.user;
    if (user) data['user'] = user;
    if (jwt) data['jwt'] = jwt;
    if (this.settings.recover) {
      data['recover'] = true;
      Object.assign(data, channel.resumeFrom());
    }
    this.write({ event: 'system::subscribe', data });
  }

  /** Subscribes `channel` again after a backoff, unless its socket or the channel went away meanwhile. */
  private resubscribeLater(channel: Channel): void {
    const generation = this.generation;
    const attempt = (this.resubscribes.get(channel.name) ?? 0) + 1;
    this.resubscribes.set(channel.name, attempt);
    host.setTimeout(
      () => {
        if (generation !== this.generation || this.channels.get(channel.name) !== channel) return;
        if (channel.state === 'pending') void this.subscribe(channel, generation);
      },
      reconnectDelay(attempt, this.settings.backoff),
    );
  }

  /** Control frames are never held back, but they count against the pace like messages. */
  private write(frame: Record<string, unknown>): void {
    if (this.socket?.readyState !== OPEN) return;
    this.written.push(this.forgetWritten());
    this.socket.send(JSON.stringify(frame));
  }

  /** Forgets frames written more than a second ago; returns the time now. */
  private forgetWritten(): number {
    const now = Date.now();
    while (this.written.length > 0 && this.written[0]! <= now - 1000) this.written.shift();
    return now;
  }

  /**
   * Whether a message may be written now: at most `maxMessagesPerSecond` frames in any second
   * (a sliding window, so no second of the server's, which counts every client frame in
   * one-second windows and closes a socket over its limit with 4029, sees more). When the
   * window is full, the channels' queues are flushed once a place frees.
   */
  private pace(): boolean {
    const now = this.forgetWritten();
    if (this.written.length < this.settings.maxMessagesPerSecond) {
      this.written.push(now);
      return true;
    }
    if (this.paceTimer === undefined) {
      const generation = this.generation;
      this.paceTimer = host.setTimeout(
        () => {
          this.paceTimer = undefined;
          if (generation !== this.generation) return;
          for (const channel of this.channels.values()) channel.flush();
        },
        this.written[0]! + 1001 - now,
      );
    }
    return false;
  }

  private message(data: unknown): void {
    if (typeof data !== 'string') {
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : (data as Uint8Array);
      this.primary?.binary(bytes);
      return;
    }
    let frame: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(data);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        frame = parsed as Record<string, unknown>;
    } catch {
      frame = undefined;
    }
    if (frame && typeof frame['error'] === 'string' && frame['event'] === undefined) {
      this.errorText = frame['error'];
      return;
    }
    const event = frame?.['event'];
    const body = frame?.['data'];
    let name: unknown = frame?.['system::channel'];
    if (this.protocol === 3) name = this.primary?.name;
    else if (typeof event === 'string' && ROUTED_BY_DATA.has(event) && typeof body === 'object' && body)
      name = (body as Record<string, unknown>)['channel'] ?? name;
    const channel = typeof name === 'string' ? this.channels.get(name) : this.primary;
    if (!channel) return;
    const info = typeof body === 'object' && body ? (body as Record<string, unknown>) : {};
    // A refusal marked `retry` (the server could not reach its engine) is no answer to this
    // subscribe: the channel stays pending and asks again, with its resume position, after a
    // backoff. Failing it would lose the channel for good over a blip.
    if (event === 'system::subscribe_error' && info['retry'] === true) return this.resubscribeLater(channel);
    switch (event) {
      case 'system::subscribe_success':
        this.resubscribes.delete(channel.name);
        if (channel.state === 'pending') channel.subscribed();
        return;
      case 'system::subscribe_error':
      case 'system::kicked':
        this.channels.delete(channel.name);
        this.settings.onLeave(channel);
        channel.finish(
          'failed',
          new SwitchboardError(
            event === 'system::kicked' ? 'kicked' : 'subscribe',
            String(info['error'] ?? info['reason'] ?? ''),
            undefined,
            channel.name,
          ),
        );
        return;
      case 'system::unsubscribe_success':
      case 'system::unsubscribe_error':
        return;
      case 'system::member_list':
        channel.receive(frame, data);
        for (const request of this.memberRequests.get(channel.name)?.splice(0) ?? [])
          request.resolve([...channel.members]);
        return;
      case 'system::member_list_error':
        for (const request of this.memberRequests.get(channel.name)?.splice(0) ?? [])
          request.reject(new SwitchboardError('frame', String(info['error']), undefined, channel.name));
        return;
    }
    channel.receive(frame, data);
  }

  private closed(generation: number, code: number, reason: string): void {
    if (generation !== this.generation) return;
    const errorText = this.errorText;
    this.drop(
      new SwitchboardError(
        'unconfirmed',
        `The connection closed (${code}${reason || errorText ? `: ${reason || errorText}` : ''}) before the server confirmed the message`,
      ),
    );
    if (isTerminalClose(code))
      return this.fail(new SwitchboardError('closed', reason || errorText || 'Connection refused', code));
    this.retry(code);
  }

  private fail(error: SwitchboardError): void {
    this.drop();
    for (const channel of [...this.channels.values()]) channel.finish('failed', error);
    this.setState('failed');
    this.settings.onError(error);
  }

  /**
   * Waits before the next attempt: a random time in [0, min(cap, base · 2^n)) for the n-th
   * consecutive retry (full jitter). A 4000–4499 close is the server asking its clients to go
   * away (drain, overload): the whole node's clients leave at once, so their first retry
   * already draws from the second window.
   */
  private retry(code: number): void {
    this.setState('disconnected');
    this.attempt = Math.max(this.attempt + 1, isServerReconnect(code) ? 2 : 1);
    if (this.settings.urls.length > 1) this.urlIndex++;
    const generation = this.generation;
    this.timer = host.setTimeout(
      () => generation === this.generation && this.connectNow(),
      reconnectDelay(this.attempt, this.settings.backoff),
    );
  }

  private failMemberRequests(error: SwitchboardError): void {
    for (const list of this.memberRequests.values())
      for (const request of list.splice(0)) request.reject(error);
  }
}

function tokenError(channel: string, error: unknown): SwitchboardError {
  return new SwitchboardError(
    'token',
    `getToken failed: ${error instanceof Error ? error.message : String(error)}`,
    undefined,
    channel,
  );
}
