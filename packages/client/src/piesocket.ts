/**
 * `@switchboard/client/piesocket`: piesocket-js's API (5.1.0: options, `subscribe`, `listen`,
 * `publish`, `unsubscribe`) on the Switchboard client, so an application moves over by
 * changing one import and gains backoff and recovery. See docs/client.md, "PieSocket facade".
 */
import type { BackoffOptions } from './backoff';
import type { Channel, Member } from './channel';
import { Switchboard } from './client';
import type { SwitchboardError } from './errors';
import { host } from './platform';
import type { WebSocketConstructor } from './platform';

export interface PieSocketOptions {
  /** 3 (piesocket-js 5.1.0's default: one socket per channel, the V3 world of `/api/publish`) or 4. */
  version?: 3 | 4;
  apiKey?: string;
  clusterId?: string;
  /** `host[:port]` replacing `<clusterId>.piesocket.com`. */
  clusterDomain?: string | null;
  /** `wss://` (default) or, with `false`, `ws://` (piesocket-js 5.2.0's option). */
  ssl?: boolean;
  notifySelf?: number | boolean | string;
  presence?: number | boolean | string;
  userId?: string | null;
  /** A token used for every channel (skips `authEndpoint`). */
  jwt?: string | null;
  /** Your endpoint answering `POST channel_name=…` (form data) with `{"auth": "<jwt>"}`. */
  authEndpoint?: string;
  authHeaders?: Record<string, string>;
  forceAuth?: boolean;
  consoleLogs?: boolean;
  /** Switchboard additions. */
  recover?: boolean;
  backoff?: BackoffOptions;
  WebSocket?: WebSocketConstructor;
}

type Listener = (data: unknown, meta: unknown) => void;
type Lifecycle = (event: unknown) => void;

const on = (value: unknown): boolean =>
  !!value && !['0', 'false', 'no'].includes(String(value).toLowerCase());

/** A subscribed channel, as piesocket-js's `Channel`. */
export class PieChannel {
  private readonly listeners: Record<
    string,
    Listener | ((event: string, data: unknown, meta: unknown) => void)
  > = {};
  private readonly events: Record<string, Lifecycle> = {};

  constructor(
    /** The Switchboard channel underneath (`recovered`, `unrecovered`, `sendBinary`…). */
    readonly channel: Channel,
    readonly uuid: string,
  ) {
    channel.tap = (event, frame, text) => {
      // Recovery bookkeeping (the channel emits `recovered`/`unrecovered`): PieSocket has no such event.
      if (event === 'system::position') return;
      if (event !== undefined) {
        const data = frame?.['data'];
        const meta = frame?.['meta'];
        (this.listeners[event] as Listener | undefined)?.(data, meta);
        this.listeners['*']?.(event as never, data, meta);
      }
      this.events['message']?.({ data: text });
    };
    channel.tapState = (up) => this.events[up ? 'open' : 'close']?.({ type: up ? 'open' : 'close' });
    channel.on('error', (error: SwitchboardError) => this.events['error']?.(error));
  }

  /** The presence members (kept from the server's member events). */
  get members(): Member[] {
    return this.channel.members;
  }

  /** One callback per event, as piesocket-js: a second `listen` replaces the first. `*` gets `(event, data, meta)`. */
  listen(event: string, callback: Listener): void {
    this.listeners[event] = callback;
  }

  /** Lifecycle callbacks: `open`, `close`, `error`, `message`. */
  on(event: string, callback: Lifecycle): void {
    this.events[event] = callback;
  }

  publish(event: string, data?: unknown, meta?: unknown): Promise<void> {
    return this.channel.publish(event, data, meta);
  }

  send(data: string): Promise<void> {
    return this.channel.sendText(data);
  }

  getMemberByUUID(uuid: string): Member | null {
    return this.members.find((member) => member.uuid === uuid) ?? null;
  }

  getCurrentMember(): Member | null {
    return this.getMemberByUUID(this.uuid);
  }
}

export class PieSocket {
  readonly options: PieSocketOptions;
  private readonly connections: Record<string, PieChannel> = {};
  /** Handles by channel, from the first `subscribe` on (a second one before it resolves shares it). */
  private readonly handles: Record<string, PieChannel> = {};
  private client: Switchboard | undefined;

  constructor(options: PieSocketOptions = {}) {
    this.options = {
      version: 3,
      clusterId: 'demo',
      clusterDomain: null,
      notifySelf: 0,
      presence: 0,
      authEndpoint: '/broadcasting/auth',
      authHeaders: {},
      forceAuth: false,
      ...options,
    };
  }

  /**
   * Subscribes, resolving once the channel is connected (as piesocket-js does when its socket
   * opens), or rejecting when it fails first. An existing channel is returned as it is.
   */
  subscribe(channelId: string): Promise<PieChannel> {
    const existing = this.connections[channelId];
    if (existing) return Promise.resolve(existing);
    const client = (this.client ??= this.createClient());
    const channel = client.channel(channelId, { presence: on(this.options.presence) });
    let handle = this.handles[channelId];
    if (handle?.channel !== channel) handle = this.handles[channelId] = new PieChannel(channel, client.uuid);
    return channel.ready().then(() => {
      this.connections[channelId] = handle;
      return handle;
    });
  }

  unsubscribe(channelId: string): boolean {
    const handle = this.handles[channelId];
    if (!handle) return false;
    handle.channel.leave();
    delete this.connections[channelId];
    delete this.handles[channelId];
    return true;
  }

  getConnections(): Record<string, PieChannel> {
    return this.connections;
  }

  /** piesocket-js's auth call: form data `channel_name`, with cookies and `authHeaders`; answer `{auth}`. */
  async getAuthToken(channel: string): Promise<{ auth?: string }> {
    const body = new host.FormData();
    body.append('channel_name', channel);
    const response = await host.fetch(this.options.authEndpoint!, {
      method: 'POST',
      body,
      credentials: 'include',
      headers: this.options.authHeaders ?? {},
    });
    return (await response.json()) as { auth?: string };
  }

  private createClient(): Switchboard {
    const { options } = this;
    const domain = options.clusterDomain ?? `${options.clusterId}.piesocket.com`;
    return new Switchboard({
      url: `${options.ssl === false ? 'ws' : 'wss'}://${domain}`,
      apiKey: options.apiKey ?? '',
      protocol: options.version === 4 ? 4 : 3,
      notifySelf: on(options.notifySelf),
      ...(options.userId ? { user: options.userId } : {}),
      forceAuth: !!options.jwt || options.forceAuth === true,
      getToken: async (channel) => options.jwt || (await this.getAuthToken(channel)).auth,
      ...(options.recover === false ? { recover: false } : {}),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.WebSocket ? { WebSocket: options.WebSocket } : {}),
    });
  }
}

export default PieSocket;
