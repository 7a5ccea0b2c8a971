import { BlockList, isIPv6 } from 'node:net';
import { quotaError, takePublishQuota } from '@switchboard/core';
import type { ApiKeyRecord, QuotaRefusal } from '@switchboard/core';
import type { HttpReply } from '../transport/types';
import type { Config, Engine } from '@switchboard/core';

/** What the quotas and rates take: the configured defaults and the engine's counters. */
export interface LimitDeps {
  readonly config: Config;
  readonly engine: Engine;
}

/**
 * Counts one cluster API request against the key's `apiRequestsPerSecond` across the cluster;
 * over it: rejects with the 429 (`Retry-After`), and nothing was carried out. Unlimited keys
 * cost nothing: `undefined`, no promise to wait for.
 */
export function takeApiRequest(ctx: LimitDeps, record: ApiKeyRecord): Promise<void> | undefined {
  const perSecond = record.limits?.apiRequestsPerSecond ?? ctx.config.limits.apiRequestsPerSecond;
  if (perSecond === 0) return undefined;
  return ctx.engine.quotas.takeApiRequest(record.key, perSecond).then(throwRefusal);
}

const throwRefusal = (refusal: QuotaRefusal | undefined): void => {
  if (refusal) throw quotaError(refusal);
};

/** The key's publication quotas (see `takePublishQuota`); `null` when it has none. */
export const takePublish = (ctx: LimitDeps, record: ApiKeyRecord): Promise<QuotaRefusal | undefined> | null =>
  takePublishQuota(ctx.engine.quotas, ctx.config, record);

/** `takePublish` for the cluster API: rejects with the 429; `undefined` when the key has no publish limit. */
export function takeRestPublish(ctx: LimitDeps, record: ApiKeyRecord): Promise<void> | undefined {
  return takePublish(ctx, record)?.then(throwRefusal);
}

/**
 * The client's address: behind a trusted proxy (the peer is in `TRUSTED_PROXIES`) the rightmost
 * `X-Forwarded-For` entry that is not itself a trusted proxy, else the peer. Entries a client
 * wrote itself sit left of the ones the proxies appended, so they are never believed.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();
  private readonly any: boolean;

  constructor(proxies: readonly string[]) {
    for (const entry of proxies) {
      const [address = '', bits] = entry.split('/');
      const family = isIPv6(address) ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.trusted.addAddress(address, family);
      else this.trusted.addSubnet(address, Number(bits), family);
    }
    this.any = proxies.length > 0;
  }

  of(peer: string, forwardedFor: string | undefined): string {
    if (!this.any || !forwardedFor || !this.isTrusted(peer)) return peer;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!.trim();
      if (!hop) continue;
      if (!this.isTrusted(hop)) return hop;
    }
    return peer;
  }

  private isTrusted(address: string): boolean {
    // uWS writes IPv4 peers as IPv4-mapped IPv6 text on a dual-stack socket.
    const plain = address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
    try {
      return this.trusted.check(plain, isIPv6(plain) ? 'ipv6' : 'ipv4');
    } catch {
      return false;
    }
  }
}

/**
 * New WebSocket connections per second from one client address on this node (fixed one-second
 * windows, in memory): decided synchronously in the upgrade, before admission reads anything from
 * the engine. Hand-written rather than a library limiter because the answer must be synchronous.
 */
export class ConnectionRateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>();
  /** The refusal text and its 429 reply, built once: a flood of connects gets them over and over. */
  private readonly refusal: string;
  readonly refusalReply: HttpReply;

  constructor(private readonly perSecond: number) {
    this.refusal = `Too many new connections: more than ${perSecond} per second from this address (NEW_CONNECTIONS_PER_SECOND_PER_IP)`;
    this.refusalReply = Object.freeze({
      status: 429,
      headers: Object.freeze({ 'retry-after': '1' }),
      body: JSON.stringify({ success: false, error: this.refusal, code: 'SB_RATE_LIMITED' }),
    });
  }

  /** Off (0) when unset: nothing to count, and the peer's address need not be read. */
  get limited(): boolean {
    return this.perSecond > 0;
  }

  /** The refusal text when `address` is over the limit, else `undefined` (and the connect is counted). */
  take(address: string, now = Date.now()): string | undefined {
    if (this.perSecond === 0) return undefined;
    let window = this.windows.get(address);
    if (!window || now - window.start >= 1000) {
      if (this.windows.size >= 100_000) this.windows.clear();
      window = { start: now, count: 0 };
      this.windows.set(address, window);
    }
    if (++window.count <= this.perSecond) return undefined;
    return this.refusal;
  }
}
