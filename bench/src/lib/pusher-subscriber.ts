import WebSocket from 'ws';
import {
  PING_FRAME,
  PONG_FRAME,
  benchDelivery,
  channelAuth,
  controlFrame,
  needsAuth,
  splitSubscription,
  subscribeFrame,
} from './pusher-protocol';
import { RawWebSocket } from './raw-ws';

/**
 * One Pusher-protocol subscriber of the load client: opens `/app/{key}?protocol=7`, waits for
 * `pusher:connection_established`, sends `pusher:subscribe`, and is subscribed on
 * `pusher_internal:subscription_succeeded`. After that every frame carrying a benchmark payload is
 * a delivery; `pusher:ping` is answered with `pusher:pong`, and `ping()` sends one when the
 * connection has been quiet (what pusher-js does after its activity timeout).
 *
 * Whatever happens, `settled` is called exactly once: subscribed, or failed with a message
 * that says what the server did (refused the upgrade, closed, sent `pusher:error`, or said nothing
 * within `timeoutMs`).
 */
export interface SubscriberHandlers {
  settled(error?: string): void;
  delivery(t: number, seq: number): void;
  /** A frame that is neither a delivery nor part of the handshake. */
  other?(frame: Buffer): void;
  closed(): void;
}

export class PusherSubscriber {
  private readonly socket: { send(text: string): void; terminate(): void; readonly done: boolean };
  private state: 'connecting' | 'established' | 'subscribed' | 'failed' = 'connecting';
  private readonly timer: NodeJS.Timeout;
  private socketDone = false;
  /** performance.now() of the last frame received. */
  lastFrameAt = performance.now();
  activityTimeoutS = 120;
  socketId = '';

  constructor(
    address: string,
    private readonly handlers: SubscriberHandlers,
    private readonly options: {
      client: 'raw' | 'ws';
      timeoutMs: number;
      /** The app's key and secret, and the member's user id: to sign private and presence subscriptions. */
      credentials?: { key: string; secret: string; userId: string };
    },
  ) {
    const { url, channel } = splitSubscription(address);
    this.channel = channel;
    this.timer = setTimeout(
      () =>
        this.fail(
          this.state === 'connecting'
            ? `no pusher:connection_established within ${options.timeoutMs} ms from ${url} (does the server speak the Pusher protocol at /app/{key}?)`
            : `no pusher_internal:subscription_succeeded for ${channel} within ${options.timeoutMs} ms`,
        ),
      options.timeoutMs,
    );
    const onMessage = (data: Buffer): void => this.onFrame(data);
    const onError = (error: Error): void => this.fail(`${url}: ${error.message}`);
    const onClose = (code?: number): void => {
      this.socketDone = true;
      if (this.state !== 'subscribed')
        this.fail(
          `${url} closed the connection${code ? ` (${code})` : ''} before the subscription succeeded`,
        );
      this.handlers.closed();
    };
    if (options.client === 'raw') {
      const ws: RawWebSocket = new RawWebSocket(url, {
        open: () => undefined,
        message: onMessage,
        error: onError,
        close: () => onClose(ws.closeCode),
      });
      this.socket = {
        send: (text) => ws.send(text),
        terminate: () => ws.terminate(),
        get done() {
          return ws.closed;
        },
      };
    } else {
      const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: options.timeoutMs });
      ws.on('message', onMessage);
      ws.on('error', onError);
      ws.on('close', (code: number) => onClose(code));
      this.socket = {
        send: (text) => ws.send(text),
        terminate: () => ws.terminate(),
        get done() {
          return ws.readyState === WebSocket.CLOSED;
        },
      };
    }
  }

  readonly channel: string;

  get subscribed(): boolean {
    return this.state === 'subscribed';
  }

  get done(): boolean {
    return this.socketDone || this.socket.done;
  }

  private fail(message: string): void {
    if (this.state === 'subscribed' || this.state === 'failed') return;
    this.state = 'failed';
    clearTimeout(this.timer);
    this.socket.terminate();
    this.handlers.settled(message);
  }

  private onFrame(data: Buffer): void {
    this.lastFrameAt = performance.now();
    if (this.state === 'subscribed') {
      const d = benchDelivery(data);
      if (d) {
        this.handlers.delivery(d.t, d.seq);
        return;
      }
    }
    let frame;
    try {
      frame = controlFrame(data.toString());
    } catch {
      this.handlers.other?.(data);
      return;
    }
    switch (frame.kind) {
      case 'ping':
        this.socket.send(PONG_FRAME);
        return;
      case 'error':
        this.fail(`pusher:error ${frame.code ?? 'null'}: ${frame.message}`);
        return;
      case 'established':
        if (this.state !== 'connecting') break;
        if (needsAuth(this.channel) && !this.options.credentials) {
          this.fail(`${this.channel} needs the app's credentials to sign its subscription`);
          return;
        }
        this.state = 'established';
        this.socketId = frame.socketId;
        this.activityTimeoutS = frame.activityTimeoutS;
        this.socket.send(subscribeFrame(this.channel, this.authFor(frame.socketId)));
        return;
      case 'subscribed':
        if (this.state !== 'established' || frame.channel !== this.channel) break;
        this.state = 'subscribed';
        clearTimeout(this.timer);
        this.handlers.settled();
        return;
      default:
        break;
    }
    this.handlers.other?.(data);
  }

  private authFor(socketId: string): ReturnType<typeof channelAuth> | undefined {
    const c = this.options.credentials;
    if (!c || !needsAuth(this.channel)) return undefined;
    return channelAuth(c.key, c.secret, socketId, this.channel, c.userId);
  }

  /** Sends `pusher:ping` when nothing arrived for the server's activity timeout. */
  keepAlive(now = performance.now()): void {
    if (this.state === 'subscribed' && now - this.lastFrameAt > this.activityTimeoutS * 1000)
      this.socket.send(PING_FRAME);
  }

  terminate(): void {
    clearTimeout(this.timer);
    this.socket.terminate();
  }
}
