import { BACKOFF_DEFAULTS } from './backoff';
import type { BackoffOptions } from './backoff';
import { Channel } from './channel';
import type { ChannelOptions } from './channel';
import { Emitter } from './emitter';
import type { Handler } from './emitter';
import { SwitchboardError } from './errors';
import { Link } from './link';
import type { ConnectionState, LinkSettings } from './link';
import { host, randomUuid } from './platform';
import type { WebSocketConstructor } from './platform';

export interface SwitchboardOptions {
  /** The gateway's base URL, `wss://realtime.example.com`; several are tried in turn on reconnects. */
  url: string | readonly string[];
  /** The public API key. */
  apiKey: string;
  /** The identity this client presents in presence lists and direct messages (a JWT `user` claim wins). */
  user?: string;
  /** This device's or session's uuid; generated when absent. */
  uuid?: string;
  /**
   * Returns a JWT for `channel` (signed by your backend with the key's secret). Called before
   * each (re)subscribe of a `private-…` channel, or of every channel with `forceAuth`, so an
   * expired token is replaced on reconnect. No token: the channel is subscribed without one
   * (the server refuses a guarded channel). A throw: the channel reports a `token` error and
   * the client retries with backoff (primary) or on the next reconnect.
   */
  getToken?: (channel: string) => string | undefined | Promise<string | undefined>;
  /** The API key guards every channel: call `getToken` for all of them. */
  forceAuth?: boolean;
  /** Resume channels after reconnects without loss (default true). */
  recover?: boolean;
  /** Receive this client's own messages too (default false). */
  notifySelf?: boolean;
  /** 4 (default): one socket for every channel. 3: one socket per channel, the V3 world. */
  protocol?: 3 | 4;
  /** A WebSocket class when the host has none (Node 20: `import WebSocket from 'ws'`). */
  WebSocket?: WebSocketConstructor;
  backoff?: BackoffOptions;
  /**
   * How many messages may wait to be sent per channel (while disconnected or paced); a publish
   * beyond rejects with a `QueueFullError`. Default 100.
   */
  maxQueued?: number;
  /**
   * The most frames the client writes per socket in any second (default 50, half the server's
   * default `CLIENT_MESSAGES_PER_SECOND`): queued messages go out at this pace.
   */
  maxMessagesPerSecond?: number;
}

export type { ConnectionState };

const STATE_ORDER: ConnectionState[] = ['disconnected', 'connecting', 'connected'];

/**
 * A Switchboard client: one WebSocket for all its channels (V4), reconnecting with backoff and
 * resuming every channel where it stopped. See docs/client.md.
 */
export class Switchboard extends Emitter {
  readonly uuid: string;
  private readonly channels = new Map<string, Channel>();
  private readonly links = new Map<Channel, Link>();
  private readonly settings: LinkSettings;
  private shared: Link | undefined;
  private current: ConnectionState = 'idle';
  private readonly online = (): void => {
    for (const link of new Set(this.links.values())) link.online();
  };

  constructor(options: SwitchboardOptions) {
    super();
    const WebSocket = options.WebSocket ?? host.WebSocket;
    if (!WebSocket)
      throw new TypeError('No WebSocket on this host: pass one, e.g. { WebSocket } from the "ws" package');
    const urls = typeof options.url === 'string' ? [options.url] : [...options.url];
    if (urls.length === 0) throw new TypeError('url is required');
    this.uuid = options.uuid ?? randomUuid();
    const { getToken, forceAuth } = options;
    this.settings = {
      protocol: options.protocol ?? 4,
      urls,
      apiKey: options.apiKey,
      user: options.user,
      uuid: this.uuid,
      notifySelf: options.notifySelf === true,
      recover: options.recover !== false,
      maxQueued: positive(options.maxQueued, 100, 'maxQueued'),
      maxMessagesPerSecond: positive(options.maxMessagesPerSecond, 50, 'maxMessagesPerSecond'),
      backoff: { ...BACKOFF_DEFAULTS, ...options.backoff },
      WebSocket,
      token: async (channel) => {
        if (!getToken || !(forceAuth || channel.startsWith('private-'))) return undefined;
        return (await getToken(channel)) || undefined;
      },
      onState: () => this.updateState(),
      onError: (error) => this.emit('error', error),
      onLeave: (channel) => {
        if (this.channels.get(channel.name) === channel) this.channels.delete(channel.name);
        const link = this.links.get(channel);
        this.links.delete(channel);
        if (link && link !== this.shared) link.close();
      },
    };
    host.addEventListener?.('online', this.online);
  }

  /** `connecting`, `connected`, `disconnected` (waiting to reconnect), `failed`, `closed`, or `idle` (no channel). */
  get state(): ConnectionState {
    return this.current;
  }

  override on(
    event: 'state',
    handler: (state: ConnectionState, previous: ConnectionState) => void,
  ): () => void;
  /** A terminal close (`kind: 'closed'`, `code`, the server's `reason`): the client stopped reconnecting. */
  override on(event: 'error', handler: (error: SwitchboardError) => void): () => void;
  override on(event: string, handler: Handler): () => void {
    return super.on(event, handler);
  }

  /** Opens (or returns the open) channel `name`. The first channel carries the socket (V4 primary). */
  channel(name: string, options: ChannelOptions = {}): Channel {
    if (this.current === 'closed') throw new SwitchboardError('state', 'The client is closed');
    const existing = this.channels.get(name);
    if (existing && existing.state !== 'failed') return existing;
    let link = this.shared;
    if (this.settings.protocol === 3 || !link || link.state === 'failed') {
      // After a terminal close, a new channel starts a new socket; the failed one is forgotten.
      for (const [old, oldLink] of this.links) if (oldLink === link) this.links.delete(old);
      link = new Link(this.settings);
      if (this.settings.protocol === 4) this.shared = link;
    }
    const channel = new Channel(name, options, link);
    this.channels.set(name, channel);
    this.links.set(channel, link);
    link.add(channel);
    this.updateState();
    return channel;
  }

  /** Closes the socket(s) for good; every channel is left. */
  close(): void {
    if (this.current === 'closed') return;
    host.removeEventListener?.('online', this.online);
    // Closed first, so leaving the channels moves no socket and reports no other state.
    this.setState('closed');
    for (const link of new Set(this.links.values())) link.close();
    this.shared?.close();
    for (const channel of [...this.channels.values()]) channel.leave();
  }

  private updateState(): void {
    if (this.current === 'closed') return;
    // A failed socket counts only when no other is alive (V3: one channel's refusal does not
    // make the whole client failed).
    const states = new Set([...this.links.values()].map((link) => link.state));
    const live = STATE_ORDER.find((state) => states.has(state));
    this.setState(live ?? (states.has('failed') ? 'failed' : 'idle'));
  }

  private setState(state: ConnectionState): void {
    if (state === this.current) return;
    const previous = this.current;
    this.current = state;
    this.emit('state', state, previous);
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  return value;
}
