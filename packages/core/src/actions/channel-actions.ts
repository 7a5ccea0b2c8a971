import { randomUUID } from 'node:crypto';
import type { Config } from '../config/load';
import type { Engine } from '../engine';
import { AppError, EngineUnavailableError } from '../errors';
import type { StreamPosition } from '../history/history';
import { historyRetention } from '../history/retention';
import type { ApiKeyRecord } from '../keys/key-store';
import type { Logger } from '../logger';
import { isoTime } from '../logs/iso-time';
import type { LogRecord } from '../logs/message-log';
import type { KickSelector, Publication } from '../broker/broker';
import type { ConnId, NodeId, Protocol, Topic } from '../types';

/**
 * What a REST publish, a kick and a history read do, whichever API they came through: the
 * gateways' cluster API (docs/openapi.yaml) and the account API (docs/console.md) call these,
 * so a message published from the console takes exactly the path of one published with curl.
 */

const isPlainObject = (value: unknown): boolean =>
  !!value && typeof value === 'object' && !Array.isArray(value);

/**
 * The message as delivered (docs/openapi.yaml): a string is the exact text, anything else its
 * compact JSON text. `stampable` when that text is a JSON object (secondaries get their
 * channel stamped in); only families whose dialect marks objects ask (`judge`): a string
 * published to any other is not parsed.
 */
export function messageText(message: unknown, judge = true): { text: string; stampable: boolean } {
  if (message === undefined || message === null) throw new AppError('SB_MISSING_MESSAGE');
  if (typeof message === 'string') {
    let stampable = false;
    if (judge && message.startsWith('{')) {
      try {
        stampable = isPlainObject(JSON.parse(message));
      } catch {
        stampable = false;
      }
    }
    return { text: message, stampable };
  }
  try {
    return { text: JSON.stringify(message), stampable: judge && isPlainObject(message) };
  } catch {
    throw new AppError('SB_INVALID_FIELD', 'Invalid field "message": nests too deeply');
  }
}

export interface PublishRequest {
  readonly record: ApiKeyRecord;
  readonly protocol: Protocol;
  /** The family's dialect marks JSON-object messages `stampable` where they enter (V4 does). */
  readonly marksObjects: boolean;
  readonly channel: string;
  readonly message: unknown;
  /** The node the message enters on; a node ignores its own publications when the engine hands them back. */
  readonly origin: NodeId;
  /**
   * Called with the publication when the publish fails unconfirmed (`EngineUnavailableError`'s
   * `unconfirmed`: sent, no answer): the engine may still make it, and the origin, which delivers
   * its own publications itself only once they are accepted, must then deliver it when the engine
   * hands it back.
   */
  readonly unconfirmed?: (publication: Publication) => void;
  /** A connection the publication leaves out on every node (Pusher's `socket_id`): its `sender`. */
  readonly except?: ConnId;
}

export interface Published {
  readonly publication: Publication;
  /** Its place in the topic's stream, when the key keeps history. */
  readonly position: StreamPosition | undefined;
}

/**
 * Publishes a REST message to every node and logs it. Accepted by the engine first: a 503 means
 * nobody, on any node, received it. The origin delivers to its own connections itself (the
 * gateway does, after this resolves); every other node gets it from the engine.
 */
export function publishMessage(
  deps: { engine: Engine; config: Config; logger: Logger },
  request: PublishRequest,
): Promise<Published> {
  return publishMessageThen(deps, request, published);
}

const published = (publication: Publication, position: StreamPosition | undefined): Published => ({
  publication,
  position,
});

/**
 * `publishMessage`, with what the caller does once the publication is accepted (`accepted`, its
 * answer resolved) in the same promise step: a caller that only goes on from the publication
 * saves a promise and a microtask per publish (the Pusher API's events; docs/performance.md,
 * "Pusher fan-out against the ceiling"). `accepted` runs only for an accepted publication; a
 * throw in it rejects the returned promise.
 */
export function publishMessageThen<T>(
  deps: { engine: Engine; config: Config; logger: Logger },
  request: PublishRequest,
  accepted: (publication: Publication, position: StreamPosition | undefined) => T,
): Promise<T> {
  // Not `async`: the engine's promise is handed on with one `then` (every REST publish passes here).
  let publication: Publication;
  let publishing: Promise<StreamPosition | undefined>;
  const { engine } = deps;
  try {
    const { record, protocol, channel } = request;
    const { text, stampable } = messageText(request.message, request.marksObjects);
    const acceptedAt = Date.now();
    // Plain assignments: a conditional spread costs about 1 µs per publish on this path.
    const built: { -readonly [K in keyof Publication]: Publication[K] } = {
      topic: { key: record.key, protocol, channel },
      body: text,
      origin: request.origin,
      source: 'api',
      acceptedAt,
    };
    if (stampable) built.stampable = true;
    if (request.except !== undefined) built.sender = request.except;
    publication = built;
    const retention = historyRetention(record, deps.config, built.topic);
    const logged: LogRecord = {
      id: randomUUID(),
      channel,
      protocol,
      source: 'api',
      message: text,
      timestamp: isoTime(acceptedAt),
    };
    if (engine.publishLogged) {
      // Where the engine can, the log append goes with the publish itself (no command of its own).
      publishing = engine.publishLogged(publication, retention, record.key, logged);
    } else {
      publishing = engine.broker.publish(publication, retention);
      // The log is bookkeeping: the answer does not wait for it (one Redis round trip less per
      // publish); it goes out after the PUBLISH on the same connection, so a later read sees it.
      void publishing.then(
        () =>
          engine.logs
            .append(record.key, logged)
            .catch((error: unknown) => deps.logger.warn({ err: error }, 'message log append failed')),
        () => undefined,
      );
    }
  } catch (error) {
    return Promise.reject(error);
  }
  return publishing.then(
    (position) => accepted(publication, position),
    (error: unknown) => {
      if (request.unconfirmed && error instanceof EngineUnavailableError && error.unconfirmed)
        request.unconfirmed(publication);
      throw error;
    },
  );
}

/** The answer to a publish: the stream position when the key keeps history. */
export const publishAnswer = ({ position }: Published): object =>
  position ? { success: true, offset: position.offset, epoch: position.epoch } : { success: true };

/**
 * How long a kick waits for every node's count (docs/protocol.md, "Kicks"): long enough for a
 * node busy with a burst, short enough that a stopped node delays the answer only this much.
 */
export const KICK_REPLY_DEADLINE_MS = 2000;

/** A kick's cluster-wide count. */
export interface KickCount {
  /** Sockets the nodes that answered closed or took out of a channel. */
  readonly kicked: number;
  /** Every node that received the kick answered before the deadline: `kicked` is the exact total. */
  readonly complete: boolean;
}

/**
 * Kicks the selected connections on every node, through the broker's control channel, and
 * resolves how many sockets they kicked (docs/protocol.md, "Kicks"): every node replies its own
 * count, and the answer comes when all did or at `deadlineMs`, partial then. The caller's own
 * node replies as well (it counts what it had not kicked already). Rejects with
 * `EngineUnavailableError` only when the engine did not take the kick.
 */
export async function kickConnections(
  engine: Engine,
  selector: KickSelector,
  deadlineMs = KICK_REPLY_DEADLINE_MS,
): Promise<KickCount> {
  const answer = await engine.broker.requestControl({ type: 'kick', selector }, deadlineMs);
  return { kicked: answer.total, complete: answer.complete };
}

/** Kicks the selected connections on every node without waiting for a count (Pusher's answer is `{}`). */
export async function announceKick(engine: Engine, selector: KickSelector): Promise<void> {
  await engine.broker.publishControl({ type: 'kick', selector });
}

/** A history answer (docs/openapi.yaml, `POST /api/v4/history`). */
export interface HistoryAnswer {
  success: true;
  epoch: string;
  offset: number;
  /** Each carries its offset (`HistoryPage`: stored publications always do). */
  publications: Array<{ offset: number | undefined; message: string; timestamp: string }>;
}

/**
 * The topic's position and its stored publications in ascending offset order: those after
 * `since` when given, else the latest `limit` (0 reads the position only).
 */
export async function readHistory(
  deps: { engine: Engine; config: Config },
  record: ApiKeyRecord,
  topic: Topic,
  options: { since?: number; limit: number },
): Promise<HistoryAnswer> {
  const { ttlSeconds } = historyRetention(record, deps.config, topic);
  const page = await deps.engine.history.read(
    topic,
    options.since === undefined
      ? { limit: options.limit, ttlSeconds }
      : { since: options.since, limit: options.limit, ttlSeconds },
  );
  return {
    success: true,
    epoch: page.epoch,
    offset: page.offset,
    publications: page.publications.map((publication) => ({
      offset: publication.offset,
      message: publication.body,
      timestamp: isoTime(publication.acceptedAt ?? 0),
    })),
  };
}
