import type { Keepalive } from './connections/keepalive';
import type { DialectHttpDeps } from './protocols/dialect';
import type { Config, Engine, KickSelector, Logger, NodeId } from '@switchboard/core';
import type { Transport } from './transport/types';
import type { Registry } from './fanout/registry';
import type { BrokerSubscriptions } from './fanout/broker-subscriptions';
import type { KeyCache } from './key-cache';
import type { Repair } from './cluster/repair';
import type { Meters } from './meters';
import type { ClientAddresses, ConnectionRateLimit } from './limits/rate-limit';
import type { AuthFailureLimiter } from '@switchboard/core';
import type { Streams } from './streams/streams';
import type { Delivery } from './fanout/delivery';
import type { ListGate } from './fanout/list-gate';
import type { CountEvents } from './fanout/count-events';
import type { SlowConsumers } from './fanout/slow-consumers';
import type { EarlyJoins } from './connections/early-joins';
import type { UnconfirmedPublications } from './api/unconfirmed';
import type { Dialects } from './protocols';

/**
 * Everything the composition root (`createGateway`) builds, as one object. No service takes it:
 * each declares the narrow slice it works with (`AdmissionDeps`, `ChannelDeps`, `RepairDeps`,
 * `StreamDeps`, `RouterDeps`, …), which this object satisfies. Tests reach the node's parts
 * through it (`Gateway.context`).
 */
export interface GatewayContext {
  readonly config: Config;
  readonly engine: Engine;
  readonly logger: Logger;
  readonly nodeId: NodeId;
  /** The wire protocols spoken here. */
  readonly dialects: Dialects;
  readonly transport: Transport;
  readonly registry: Registry;
  readonly subscriptions: BrokerSubscriptions;
  /** Delivery to this node's sockets: plain subscribers and ordered streams alike. */
  readonly delivery: Delivery;
  /** Presence subscriptions waiting for their member list. */
  readonly listGate: ListGate;
  /** Subscription count events of counted channels (`Dialect.countEvents`). */
  readonly countEvents: CountEvents;
  /** Opted-in subscriptions' streams: offsets, history catch-up, gap filling. */
  readonly streams: Streams;
  /** Checks the sockets of topics delivered to for the slow-consumer limit. */
  readonly slowConsumers: SlowConsumers;
  /** Protocol-level server pings of the dialects that have them. */
  readonly keepalive: Keepalive;
  /** Presence joins of connections still being admitted. */
  readonly earlyJoins: EarlyJoins;
  /** REST publications whose publish failed unconfirmed, delivered here if Redis makes them. */
  readonly unconfirmed: UnconfirmedPublications;
  readonly keys: KeyCache;
  readonly repair: Repair;
  readonly meters: Meters;
  /** Client addresses behind `TRUSTED_PROXIES`. */
  readonly addresses: ClientAddresses;
  /** `NEW_CONNECTIONS_PER_SECOND_PER_IP`, on this node. */
  readonly connectionRate: ConnectionRateLimit;
  readonly authFailures: AuthFailureLimiter;
  readonly status: { draining: boolean; admitting: number };
  /** Kicks this node's matching connections at once (`executeKick`). */
  kickHere(selector: KickSelector): number;
  nextConnId(): string;
  nextSocketId(): string;
  /** What the dialects' own HTTP APIs take (`Dialect.http`). */
  readonly dialectHttp: DialectHttpDeps;
}
